package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// The control-plane tier of the node agent (issue 27): on a control-plane node it finds kube-apiserver,
// etcd, kube-scheduler and kube-controller-manager (or the single k3s/rke2 server) by their processes,
// reads their flags and static-pod manifests, and their CPU: seconds and rate, the run-queue wait of their
// threads, their cgroup's quota, throttling and pressure, against the node's cores.

// ControlPlaneOptions say where the agent reads. In the DaemonSet the pod has the host's PID namespace
// (hostPID) and network namespace (hostNetwork); the host's /proc, /sys/fs/cgroup and manifest directories
// are mounted read-only.
type ControlPlaneOptions struct {
	// Proc is a procfs of the host's PID namespace.
	Proc string
	// Cgroup is the host's cgroup root (/sys/fs/cgroup: a cgroup2 mount, or v1 hierarchies by controller
	// with an optional "unified" cgroup2 mount beside them).
	Cgroup string
	// ManifestDirs are static-pod manifest directories to read, as the host names them (kubeadm's
	// /etc/kubernetes/manifests, rke2's and k3s's pod-manifests), besides the one the node's kubelet is
	// given (--pod-manifest-path, or staticPodPath in its --config); missing ones are skipped. They are read
	// through /proc/1/root (the host's root) and /proc/<kubelet>/root, so no host directory is mounted: a
	// hostPath of a directory a node lacks would be created on it, or keep the pod from starting.
	ManifestDirs []string
	// Interval between the two CPU samples the rates are computed over.
	Interval time.Duration
	// NodeName is recorded as given.
	NodeName string
	// SelfNetNS is the agent's own network namespace link ("net:[4026531840]"); "" reads Proc/self/ns/net.
	SelfNetNS string
}

// DefaultManifestDirs are where kubeadm, rke2 and k3s keep static-pod manifests.
var DefaultManifestDirs = []string{"/etc/kubernetes/manifests", "/var/lib/rancher/rke2/agent/pod-manifests", "/var/lib/rancher/k3s/agent/pod-manifests"}

// ControlPlane is what the agent found of the control plane on its node.
type ControlPlane struct {
	Node string `json:"node,omitempty"`
	// Cores is the node's online CPU count (/proc/stat).
	Cores int `json:"cores"`
	// NetNS is the network namespace the components were looked for in (the node's).
	NetNS      string      `json:"netns"`
	Components []Component `json:"components"`
	// Elsewhere counts control-plane processes seen in the PID namespace but in another network namespace
	// (another node's, or a control plane run outside every node): seen, not claimed.
	Elsewhere map[string]int `json:"elsewhere,omitempty"`
	// PSI is the node's cpu pressure (/proc/pressure/cpu), nil where the kernel has no PSI.
	PSI *PSIPair `json:"psi,omitempty"`
	// IntervalSeconds is the time between the two samples the rates come from.
	IntervalSeconds float64 `json:"interval_seconds"`
	// ManifestDirs are the static-pod directories read, as the host names them.
	ManifestDirs []string `json:"manifest_dirs,omitempty"`
	Unread       []string `json:"unread,omitempty"`

	kubelet      int
	kubeletFlags map[string]string
}

// Component is one control-plane process on the node.
type Component struct {
	// Name is a Comp* constant.
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Flags are the component's flags that kubeslow reads (ReadFlags: addresses, audit, metrics), not all.
	Flags map[string]string `json:"flags"`
	// Manifest is the static-pod manifest that runs it ("" when none was found), ManifestFlags its flags
	// there (they differ from Flags while the kubelet has not yet restarted it).
	Manifest      string            `json:"manifest,omitempty"`
	ManifestFlags map[string]string `json:"manifest_flags,omitempty"`
	// AllowedCPUs is the number of CPUs its threads may run on (Cpus_allowed_list).
	AllowedCPUs int        `json:"allowed_cpus,omitempty"`
	CPU         ProcCPU    `json:"cpu"`
	Cgroup      *CgroupCPU `json:"cgroup,omitempty"`
	Unread      []string   `json:"unread,omitempty"`
}

// ProcCPU is a process's CPU use and run-queue wait.
type ProcCPU struct {
	// Seconds is utime+stime of every thread, live and exited, since the process started (/proc/PID/stat).
	Seconds float64 `json:"seconds"`
	// Rate is the cores it used between the two samples.
	Rate float64 `json:"rate"`
	// SchedWaitSeconds is the time its live threads waited on a run queue (/proc/PID/task/*/schedstat,
	// the second field: Coroot's "CPU delay"); SchedWaitRate its growth per second between the samples,
	// which is above 0.1 when its threads together waited 100 ms per second for a CPU.
	SchedWaitSeconds float64 `json:"sched_wait_seconds"`
	SchedWaitRate    float64 `json:"sched_wait_rate"`
	Threads          int     `json:"threads"`
	// StartSeconds is its start in seconds after boot.
	StartSeconds float64 `json:"start_seconds"`
}

// CgroupCPU is the CPU cgroup a component runs in.
type CgroupCPU struct {
	// Version is 1 or 2; Path is the cgroup as the host names it (in the cpu hierarchy for v1).
	Version int    `json:"version"`
	Path    string `json:"path"`
	// LimitCores is the tightest CPU quota on the cgroup and its ancestors (0: none), set at LimitPath.
	LimitCores float64 `json:"limit_cores,omitempty"`
	LimitPath  string  `json:"limit_path,omitempty"`
	// Throttling is LimitPath's cpu.stat between the two samples: counted only where a limit exists.
	Throttling *Throttling `json:"throttling,omitempty"`
	// PSI is the cgroup's cpu.pressure (its cgroup2 directory; nil where PSI is off or there is none).
	PSI *PSIPair `json:"psi,omitempty"`
}

// Throttling is the CFS bandwidth controller's throttling between two samples.
type Throttling struct {
	Periods          uint64  `json:"periods"`
	Throttled        uint64  `json:"throttled"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// readFlags are the flags a component reports: where its audit log, metrics and peers are. Others stay
// on the node (some name key files; k3s's --datastore-endpoint may hold a password).
var readFlags = map[string]bool{
	"audit-log-path": true, "audit-policy-file": true, "audit-log-maxsize": true, "audit-log-maxbackup": true,
	"audit-log-maxage": true, "audit-log-compress": true, "audit-log-format": true, "audit-webhook-config-file": true,
	"listen-metrics-urls": true, "listen-client-urls": true, "advertise-client-urls": true, "etcd-servers": true,
	"bind-address": true, "secure-port": true, "authorization-always-allow-paths": true, "max-requests-inflight": true,
	"max-mutating-requests-inflight": true, "enable-priority-and-fairness": true, "kube-api-qps": true,
	"kube-api-burst": true, "quota-backend-bytes": true, "data-dir": true, "etcd-expose-metrics": true,
	"disable-etcd": true, "disable-apiserver": true, "disable-scheduler": true, "disable-controller-manager": true,
}

// ReadFlags keeps of a command line's flags those kubeslow reads; for k3s/rke2 each embedded component's
// pass-through flags are kept as "<component>:<flag>" (e.g. "kube-apiserver:audit-log-path").
func ReadFlags(comp string, args []string) map[string]string {
	all := ParseFlags(args)
	out := map[string]string{}
	for k, v := range all {
		if readFlags[k] {
			out[k] = v
		}
	}
	if comp == CompK3s || comp == CompRKE2 {
		for _, c := range []string{CompAPIServer, CompEtcd, CompScheduler, CompController} {
			for k, v := range K3sComponentFlags(all, c) {
				if readFlags[k] {
					out[c+":"+k] = v
				}
			}
		}
	}
	return out
}

// FlagOf is a component's flag: its own, or for k3s/rke2 the one passed to the embedded component.
func (c *Component) FlagOf(comp, flag string) (string, bool) {
	if c.Name == CompK3s || c.Name == CompRKE2 {
		v, ok := c.Flags[comp+":"+flag]
		return v, ok
	}
	v, ok := c.Flags[flag]
	return v, ok
}

// Embeds reports whether this process is (or runs inside it) the component comp.
func (c *Component) Embeds(comp string) bool {
	return c.Name == comp || (c.Name == CompK3s && comp != "")
}

type procSample struct {
	t            time.Time
	cpu          float64
	wait         float64
	threads      int
	cg           *hostfs.PSI
	cgStat       *hostfs.CPUStat
	waitReadable bool
}

// FindControlPlane lists the control-plane processes in the agent's network namespace (without sampling
// their CPU): the pid, name and flags of each, what is elsewhere, and what could not be read.
func FindControlPlane(o ControlPlaneOptions) (*ControlPlane, procfs.FS, error) {
	cp := &ControlPlane{Node: o.NodeName, Elsewhere: map[string]int{}}
	pfs, err := procfs.NewFS(o.Proc)
	if err != nil {
		return nil, pfs, fmt.Errorf("procfs %s: %w", o.Proc, err)
	}
	self := o.SelfNetNS
	if self == "" {
		if self, err = os.Readlink(filepath.Join(o.Proc, "self", "ns", "net")); err != nil {
			return nil, pfs, fmt.Errorf("own network namespace: %w", err)
		}
	}
	cp.NetNS = self
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil, pfs, fmt.Errorf("listing processes: %w", err)
	}
	for _, p := range procs {
		argv, err := p.CmdLine()
		if err != nil {
			continue // gone, or a kernel thread
		}
		name := ComponentOf(argv)
		if name == "" && (len(argv) == 0 || path.Base(argv[0]) != "kubelet") {
			continue
		}
		ns, err := os.Readlink(filepath.Join(o.Proc, strconv.Itoa(p.PID), "ns", "net"))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				cp.Unread = append(cp.Unread, fmt.Sprintf("%s pid %d: its network namespace is unreadable, so it is not claimed (reading another root process's /proc/PID/ns needs CAP_SYS_PTRACE): %v", name, p.PID, err))
			}
			continue
		}
		if name == "" { // the node's kubelet: where its static pods are
			if ns == self {
				cp.kubelet, cp.kubeletFlags = p.PID, ParseFlags(argv[1:])
			}
			continue
		}
		if ns != self {
			cp.Elsewhere[name]++
			continue
		}
		cp.Components = append(cp.Components, Component{Name: name, PID: p.PID, Flags: ReadFlags(name, argv[1:])})
	}
	sort.Slice(cp.Components, func(i, j int) bool { return cp.Components[i].Name < cp.Components[j].Name })
	if len(cp.Elsewhere) == 0 {
		cp.Elsewhere = nil
	}
	return cp, pfs, nil
}

// ReadControlPlane finds the control plane on the node and samples its CPU twice, Interval apart.
func ReadControlPlane(ctx context.Context, o ControlPlaneOptions) (*ControlPlane, error) {
	cp, pfs, err := FindControlPlane(o)
	if err != nil {
		return nil, err
	}
	if st, err := pfs.Stat(); err == nil {
		cp.Cores = len(st.CPU)
	} else {
		cp.Unread = append(cp.Unread, fmt.Sprintf("cores: %v", err))
	}
	manifests := map[string]manifest{}
	if len(cp.Components) > 0 { // none to attach a manifest to otherwise
		manifests, cp.ManifestDirs = readManifests(cp.manifestDirs(o), &cp.Unread)
	}
	cgRoot := cgroupLayout(o.Cgroup)
	for i := range cp.Components {
		c := &cp.Components[i]
		if m, ok := manifests[c.Name]; ok {
			c.Manifest, c.ManifestFlags = m.path, m.flags
		}
		p, err := pfs.Proc(c.PID)
		if err != nil {
			c.Unread = append(c.Unread, err.Error())
			continue
		}
		if st, err := p.NewStatus(); err == nil {
			c.AllowedCPUs = len(st.CpusAllowedList)
		}
		cgs, err := p.Cgroups()
		if err != nil {
			c.Unread = append(c.Unread, fmt.Sprintf("cgroup: %v", err))
			continue
		}
		cg, err := cgRoot.resolve(cgs)
		if err != nil {
			c.Unread = append(c.Unread, fmt.Sprintf("cgroup: %v", err))
			continue
		}
		c.Cgroup = cg
	}
	nodePSI := func() *hostfs.PSI {
		some, _, err := hostfs.FS{Proc: o.Proc}.Pressure("cpu")
		if err != nil {
			return nil
		}
		return &some
	}
	n0, t0 := nodePSI(), time.Now()
	s0 := make([]procSample, len(cp.Components))
	for i := range cp.Components {
		s0[i] = sampleProc(pfs, &cp.Components[i], cgRoot)
	}
	if o.Interval > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.Interval):
		}
	}
	n1, t1 := nodePSI(), time.Now()
	cp.IntervalSeconds = t1.Sub(t0).Seconds()
	if n0 != nil && n1 != nil {
		cp.PSI = &PSIPair{SomeAvg10: n1.Avg10, SomeAvg60: n1.Avg60, SomeWindow: stallShare(n0.TotalMicros, n1.TotalMicros, t1.Sub(t0)), WindowSeconds: t1.Sub(t0).Seconds()}
	}
	for i := range cp.Components {
		c := &cp.Components[i]
		a, b := s0[i], sampleProc(pfs, c, cgRoot)
		dt := b.t.Sub(a.t).Seconds()
		c.CPU = ProcCPU{Seconds: b.cpu, SchedWaitSeconds: b.wait, Threads: b.threads}
		if st, err := pfs.Proc(c.PID); err == nil {
			if ps, err := st.Stat(); err == nil {
				c.CPU.StartSeconds = float64(ps.Starttime) / 100 // USER_HZ, as procfs's CPUTime assumes
			}
		}
		if dt > 0 {
			c.CPU.Rate = max(0, (b.cpu-a.cpu)/dt)
			// Threads that exited between the samples take their wait with them: clamp at 0.
			c.CPU.SchedWaitRate = max(0, (b.wait-a.wait)/dt)
		}
		if !b.waitReadable {
			c.Unread = append(c.Unread, "run-queue wait: no /proc/PID/task/*/schedstat (kernel without CONFIG_SCHEDSTATS or schedstats)")
		}
		if c.Cgroup != nil {
			if a.cg != nil && b.cg != nil {
				c.Cgroup.PSI = &PSIPair{SomeAvg10: b.cg.Avg10, SomeAvg60: b.cg.Avg60, SomeWindow: stallShare(a.cg.TotalMicros, b.cg.TotalMicros, b.t.Sub(a.t)), WindowSeconds: dt}
			}
			if c.Cgroup.LimitCores > 0 && a.cgStat != nil && b.cgStat != nil {
				c.Cgroup.Throttling = &Throttling{Periods: sub(b.cgStat.Periods, a.cgStat.Periods), Throttled: sub(b.cgStat.Throttled, a.cgStat.Throttled),
					ThrottledSeconds: max(0, b.cgStat.ThrottledSeconds-a.cgStat.ThrottledSeconds)}
			}
		}
	}
	return cp, nil
}

func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// sampleProc reads a component's CPU seconds, its live threads' run-queue wait and its cgroup's counters.
func sampleProc(pfs procfs.FS, c *Component, cg cgroupRoots) procSample {
	s := procSample{t: time.Now()}
	p, err := pfs.Proc(c.PID)
	if err != nil {
		return s
	}
	if st, err := p.Stat(); err == nil {
		s.cpu = st.CPUTime()
	}
	if ts, err := pfs.AllThreads(c.PID); err == nil {
		for _, t := range ts {
			ss, err := t.Schedstat()
			if err != nil {
				continue
			}
			s.waitReadable = true
			s.wait += float64(ss.WaitingNanoseconds) / 1e9
			s.threads++
		}
	}
	if c.Cgroup == nil {
		return s
	}
	if c.Cgroup.LimitPath != "" {
		if b, err := os.ReadFile(filepath.Join(cg.cpuDir(c.Cgroup.Version), c.Cgroup.LimitPath, "cpu.stat")); err == nil {
			if st, err := hostfs.ParseCPUStat(b); err == nil {
				s.cgStat = &st
			}
		}
	}
	if d := cg.psiDir(c.Cgroup); d != "" {
		if b, err := os.ReadFile(filepath.Join(d, "cpu.pressure")); err == nil {
			if some, _, err := hostfs.ParsePSI(b); err == nil {
				s.cg = &some
			}
		}
	}
	return s
}

// cgroupRoots is where the host's cgroup hierarchies are: v1's cpu controller directory and the cgroup2
// mount ("" where there is none).
type cgroupRoots struct {
	v1CPU, v2 string
	// v2Path is, once resolved, the component's cgroup2 path (for cpu.pressure in a hybrid layout).
	v2Path string
	// nsRoot is the agent's own cgroup2 path, the root of its cgroup namespace (found once, when needed).
	nsRoot string
}

// findCgroupOf walks a cgroup2 tree (at most limit directories) for the cgroup whose cgroup.procs lists pid.
func findCgroupOf(root string, pid, limit int) (string, error) {
	found, seen := "", 0
	errStop := errors.New("stop")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if seen++; seen > limit {
			return errStop
		}
		pids, err := hostfs.CgroupProcs(p)
		if err != nil {
			return nil
		}
		for _, q := range pids {
			if q == pid {
				rel, _ := filepath.Rel(root, p)
				found = path.Clean("/" + filepath.ToSlash(rel))
				return errStop
			}
		}
		return nil
	})
	if found != "" {
		return found, nil
	}
	if err != nil && !errors.Is(err, errStop) {
		return "", err
	}
	return "", fmt.Errorf("pid %d in none of %d cgroups under %s", pid, seen, root)
}

func cgroupLayout(root string) cgroupRoots {
	var r cgroupRoots
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		r.v2 = root
		return r
	}
	for _, d := range []string{"cpu", "cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(root, d, "cpu.cfs_quota_us")); err == nil {
			r.v1CPU = filepath.Join(root, d)
			break
		}
	}
	if _, err := os.Stat(filepath.Join(root, "unified", "cgroup.controllers")); err == nil {
		r.v2 = filepath.Join(root, "unified")
	}
	return r
}

func (r cgroupRoots) cpuDir(version int) string {
	if version == 1 {
		return r.v1CPU
	}
	return r.v2
}

func (r cgroupRoots) psiDir(c *CgroupCPU) string {
	if r.v2 == "" {
		return ""
	}
	p := c.Path
	if c.Version == 1 {
		p = r.v2Path
	}
	if p == "" || p == "/" {
		return "" // the root cgroup's pressure is the node's (ControlPlane.PSI)
	}
	return filepath.Join(r.v2, p)
}

// resolve finds a process's CPU cgroup from its /proc/PID/cgroup lines, and the tightest quota on it and
// its ancestors.
func (r *cgroupRoots) resolve(cgs []procfs.Cgroup) (*CgroupCPU, error) {
	var v1, v2 *procfs.Cgroup
	for i := range cgs {
		c := &cgs[i]
		if c.HierarchyID == 0 {
			v2 = c
		}
		for _, ctl := range c.Controllers {
			if ctl == "cpu" {
				v1 = c
			}
		}
	}
	if v2 != nil && strings.HasPrefix(v2.Path, "/..") && r.v2 != "" {
		// The pod has a private cgroup namespace (containerd's default on cgroup v2): the kernel writes other
		// processes' paths relative to the agent's own cgroup, which is found by its pid in cgroup.procs.
		if r.nsRoot == "" {
			root, err := findCgroupOf(r.v2, os.Getpid(), 20000)
			if err != nil {
				return nil, fmt.Errorf("cgroup2 path %q is relative to the agent's cgroup namespace, whose root was not found: %v", v2.Path, err)
			}
			r.nsRoot = root
		}
		v2.Path = path.Join(r.nsRoot, v2.Path)
	}
	if v2 != nil {
		r.v2Path = v2.Path
	}
	var cg *CgroupCPU
	switch {
	case v1 != nil && r.v1CPU != "":
		cg = &CgroupCPU{Version: 1, Path: v1.Path}
	case v2 != nil && r.v2 != "":
		cg = &CgroupCPU{Version: 2, Path: v2.Path}
	default:
		return nil, fmt.Errorf("no cpu cgroup hierarchy mounted for %d cgroup lines", len(cgs))
	}
	if strings.HasPrefix(cg.Path, "/..") {
		return nil, fmt.Errorf("cgroup path %q is relative to the agent's own cgroup namespace (the pod has a private cgroupns)", cg.Path)
	}
	dir := r.cpuDir(cg.Version)
	for p := path.Clean("/" + cg.Path); ; p = path.Dir(p) {
		cores, err := quotaAt(filepath.Join(dir, p), cg.Version)
		if err == nil && cores > 0 && (cg.LimitCores == 0 || cores < cg.LimitCores) {
			cg.LimitCores, cg.LimitPath = cores, p
		}
		if p == "/" {
			break
		}
	}
	return cg, nil
}

func quotaAt(dir string, version int) (float64, error) {
	if version == 2 {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return 0, err
		}
		return hostfs.ParseCPUMax(b)
	}
	q, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	if err != nil {
		return 0, err
	}
	p, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err != nil {
		return 0, err
	}
	return hostfs.ParseCFSQuota(q, p)
}

// manifestDirs are the directories the static pods may be in, as the agent reaches them: the kubelet's
// (through its root) and the usual ones (through the host's).
func (cp *ControlPlane) manifestDirs(o ControlPlaneOptions) [][2]string {
	var out [][2]string
	if cp.kubelet != 0 {
		d := cp.kubeletFlags["pod-manifest-path"]
		if d == "" {
			if cfg := cp.kubeletFlags["config"]; path.IsAbs(cfg) {
				if b, err := readBounded(filepath.Join(o.Proc, strconv.Itoa(cp.kubelet), "root", cfg), maxManifest); err == nil {
					d = KubeletStaticPodPath(b)
				}
			}
		}
		if path.IsAbs(d) {
			out = append(out, [2]string{d, filepath.Join(o.Proc, strconv.Itoa(cp.kubelet), "root", d)})
		}
	}
	if len(out) > 0 {
		return out // the kubelet's own directory is the one its static pods come from
	}
	for _, d := range o.ManifestDirs {
		out = append(out, [2]string{d, filepath.Join(o.Proc, "1", "root", d)})
	}
	return out
}

type manifest struct {
	path  string
	flags map[string]string
}

// maxManifest bounds a static-pod manifest read (kubeadm's are a few KiB).
const maxManifest = 1 << 20

// readManifests reads the static-pod manifests in dirs and returns, by component, the manifest whose
// container runs it (its command's first word) with that container's flags.
func readManifests(dirs [][2]string, unread *[]string) (map[string]manifest, []string) {
	out := map[string]manifest{}
	var read []string
	for _, dd := range dirs {
		name, d := dd[0], dd[1]
		ents, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				*unread = append(*unread, fmt.Sprintf("manifests %s: %v", name, err))
			}
			continue
		}
		read = append(read, name)
		for _, e := range ents {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			b, err := readBounded(filepath.Join(d, e.Name()), maxManifest)
			if err != nil {
				*unread = append(*unread, fmt.Sprintf("manifest %s: %v", path.Join(name, e.Name()), err))
				continue
			}
			for _, argv := range ManifestCommands(b) {
				if comp := ComponentOf(argv); comp != "" {
					if _, seen := out[comp]; !seen {
						out[comp] = manifest{path: path.Join(name, e.Name()), flags: ReadFlags(comp, argv[1:])}
					}
				}
			}
		}
	}
	return out, read
}

func readBounded(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d read", st.Size(), limit)
	}
	b := make([]byte, st.Size())
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return b[:n], nil
}
