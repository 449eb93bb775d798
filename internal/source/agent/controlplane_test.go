package agent

import (
	"context"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// testdata/controlplane was recorded by hack/record-cp-fixture.sh from the lab's control plane (etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler in the lab's control-plane network namespace,
// "self" being that namespace) and a real node's kubelet, in another namespace, on a cgroup v1 host with a
// cgroup2 mount beside it ("unified").
const fixture = "testdata/controlplane"

// copyTree copies a fixture tree, symlinks (the recorded network namespaces) included, so a test may edit it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func fixtureOpts(root string) ControlPlaneOptions {
	return ControlPlaneOptions{Proc: filepath.Join(root, "proc"), Cgroup: filepath.Join(root, "cgroup"), NodeName: "n1"}
}

// cpuSecondsOf and waitOf read the recorded files independently of procfs: utime+stime (fields 14 and 15)
// in USER_HZ, and the sum of the threads' run-queue wait (schedstat's second field, ns).
func cpuSecondsOf(t *testing.T, root string, pid int) float64 {
	b, err := os.ReadFile(filepath.Join(root, "proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

func waitOf(t *testing.T, root string, pid int) (float64, int) {
	files, _ := filepath.Glob(filepath.Join(root, "proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	var w float64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strconv.ParseFloat(strings.Fields(string(b))[1], 64)
		w += v / 1e9
	}
	return w, len(files)
}

func TestReadControlPlaneFixture(t *testing.T) {
	cp, err := ReadControlPlane(context.Background(), fixtureOpts(fixture))
	if err != nil {
		t.Fatal(err)
	}
	if cp.Node != "n1" || cp.Cores != 2 || cp.NetNS == "" || len(cp.Elsewhere) != 0 {
		t.Errorf("node %q cores %d netns %q elsewhere %v", cp.Node, cp.Cores, cp.NetNS, cp.Elsewhere)
	}
	var names []string
	by := map[string]*Component{}
	for i := range cp.Components {
		c := &cp.Components[i]
		names = append(names, c.Name)
		by[c.Name] = c
		if c.CPU.Seconds <= 0 || math.Abs(c.CPU.Seconds-cpuSecondsOf(t, fixture, c.PID)) > 1e-9 {
			t.Errorf("%s cpu seconds %v, want %v", c.Name, c.CPU.Seconds, cpuSecondsOf(t, fixture, c.PID))
		}
		w, threads := waitOf(t, fixture, c.PID)
		if threads < 2 || c.CPU.Threads != threads || math.Abs(c.CPU.SchedWaitSeconds-w) > 1e-9 {
			t.Errorf("%s sched wait %v s over %d threads, want %v over %d", c.Name, c.CPU.SchedWaitSeconds, c.CPU.Threads, w, threads)
		}
		if c.Cgroup == nil || c.Cgroup.Version != 1 || c.Cgroup.LimitCores != 0 || c.Cgroup.Throttling != nil {
			t.Errorf("%s cgroup %+v (no quota recorded: no throttling counted)", c.Name, c.Cgroup)
		}
		if c.AllowedCPUs != 2 || len(c.Unread) != 0 {
			t.Errorf("%s allowed %d unread %q", c.Name, c.AllowedCPUs, c.Unread)
		}
	}
	if strings.Join(names, ",") != "etcd,kube-apiserver,kube-controller-manager,kube-scheduler" {
		t.Fatalf("components %v", names)
	}
	if g := by[CompEtcd].Cgroup.Path; g != "/kubeslow-lab/control-plane" {
		t.Errorf("etcd's cpu cgroup %q", g)
	}
	if by[CompEtcd].Cgroup.PSI != nil || cp.PSI == nil {
		// The lab's control plane is in the cgroup2 root, whose pressure is the node's: reported once, as the node's.
		t.Errorf("cgroup PSI %+v, node PSI %+v", by[CompEtcd].Cgroup.PSI, cp.PSI)
	}
	api := by[CompAPIServer]
	if !strings.HasSuffix(api.Flags["audit-log-path"], "/logs/audit.log") || api.Flags["audit-log-format"] != "json" || api.Flags["secure-port"] != "6443" {
		t.Errorf("apiserver flags %q", api.Flags)
	}
	if _, ok := api.Flags["tls-private-key-file"]; ok {
		t.Error("a flag kubeslow does not read was reported")
	}
	if _, err := MetricsURL(by[CompEtcd], CompEtcd); err == nil || !strings.Contains(err.Error(), "--listen-metrics-urls") {
		t.Errorf("the lab's etcd has no metrics URL: %v", err)
	}
	if u, err := MetricsURL(by[CompController], CompController); err != nil || u != "https://198.19.255.1:10257/metrics" {
		t.Errorf("kcm metrics %q %v", u, err)
	}
	if u, err := MetricsURL(by[CompScheduler], CompScheduler); err != nil || !strings.HasSuffix(u, ":10259/metrics") {
		t.Errorf("scheduler metrics %q %v", u, err)
	}
}

// An agent in another network namespace (a real node's) sees the control plane's processes through the
// shared PID namespace and claims none.
func TestReadControlPlaneOtherNetNS(t *testing.T) {
	o := fixtureOpts(fixture)
	o.SelfNetNS = "net:[1]"
	cp, err := ReadControlPlane(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Components) != 0 || cp.Elsewhere[CompAPIServer] != 1 || cp.Elsewhere[CompEtcd] != 1 || len(cp.Elsewhere) != 4 {
		t.Errorf("components %+v elsewhere %v", cp.Components, cp.Elsewhere)
	}
}

// A CPU quota on the control plane's cgroup (as a tester's 10% of a core): the limit and where it is set,
// and throttling counted there; components outside it have neither.
func TestReadControlPlaneQuota(t *testing.T) {
	root := copyTree(t, fixture)
	d := filepath.Join(root, "cgroup", "cpu", "kubeslow-lab", "control-plane")
	if err := os.WriteFile(filepath.Join(d, "cpu.cfs_quota_us"), []byte("10000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "cpu.stat"), []byte("nr_periods 50\nnr_throttled 40\nthrottled_time 3000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A kubelet in the control plane's namespace whose static pods are in its --pod-manifest-path.
	kp := filepath.Join(root, "proc", "99999")
	for _, dir := range []string{"ns", "root/etc/m"} {
		if err := os.MkdirAll(filepath.Join(kp, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, _ := os.Readlink(filepath.Join(root, "proc", "self", "ns", "net"))
	_ = os.Symlink(self, filepath.Join(kp, "ns", "net"))
	_ = os.WriteFile(filepath.Join(kp, "cmdline"), []byte("/usr/bin/kubelet\x00--pod-manifest-path\x00/etc/m\x00"), 0o644)
	_ = os.WriteFile(filepath.Join(kp, "root/etc/m/etcd.yaml"), []byte("spec:\n  containers:\n  - command: [etcd, --listen-metrics-urls=http://127.0.0.1:2381]\n"), 0o644)
	cp, err := ReadControlPlane(context.Background(), fixtureOpts(root))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cp.Components {
		cg := c.Cgroup
		switch c.Name {
		case CompEtcd, CompAPIServer:
			if cg.LimitCores != 0.1 || cg.LimitPath != "/kubeslow-lab/control-plane" || cg.Throttling == nil || cg.Throttling.Throttled != 0 {
				t.Errorf("%s: %+v (throttling %+v): want a 0.1-core limit and its throttling (no growth between identical samples)", c.Name, cg, cg.Throttling)
			}
		default:
			if cg.LimitCores != 0 || cg.Throttling != nil {
				t.Errorf("%s: limit %v throttling %+v outside the limited cgroup", c.Name, cg.LimitCores, cg.Throttling)
			}
		}
		if c.Name == CompEtcd && (c.Manifest != "/etc/m/etcd.yaml" || c.ManifestFlags["listen-metrics-urls"] != "http://127.0.0.1:2381") {
			t.Errorf("etcd manifest %q %q", c.Manifest, c.ManifestFlags)
		}
	}
	if len(cp.ManifestDirs) != 1 || cp.ManifestDirs[0] != "/etc/m" {
		t.Errorf("manifest dirs %q", cp.ManifestDirs)
	}
}

// A cgroup2 host whose agent pod has a private cgroup namespace: the components' paths come relative to the
// agent's own cgroup ("/../../system.slice/etcd.service"), which is found by the agent's pid.
func TestResolveCgroupNamespace(t *testing.T) {
	root := t.TempDir()
	mk := func(p, file, content string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if file != "" {
			if err := os.WriteFile(filepath.Join(root, p, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("", "cgroup.controllers", "cpu io memory\n")
	mk("", "cpu.max", "max 100000\n")
	mk("kubepods/podA/ctr", "cgroup.procs", strconv.Itoa(os.Getpid())+"\n")
	mk("system.slice", "cpu.max", "150000 100000\n")
	mk("system.slice/etcd.service", "cpu.max", "max 100000\n")
	r := cgroupLayout(root)
	cg, err := r.resolve(parseCgroupLines(t, "0::/../../../system.slice/etcd.service\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version != 2 || cg.Path != "/system.slice/etcd.service" || cg.LimitCores != 1.5 || cg.LimitPath != "/system.slice" {
		t.Errorf("%+v", cg)
	}
	if d := r.psiDir(cg); d != filepath.Join(root, "system.slice/etcd.service") {
		t.Errorf("cpu.pressure read in %q", d)
	}
}

func parseCgroupLines(t *testing.T, s string) []procfs.Cgroup {
	t.Helper()
	var out []procfs.Cgroup
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.SplitN(l, ":", 3)
		id, _ := strconv.Atoi(f[0])
		var ctl []string
		if f[1] != "" {
			ctl = strings.Split(f[1], ",")
		}
		out = append(out, procfs.Cgroup{HierarchyID: id, Controllers: ctl, Path: f[2]})
	}
	return out
}
