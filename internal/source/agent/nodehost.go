package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// NodeHostOptions say where the node agent reads and what it probes. Host paths come from configurable
// roots (node_exporter's --path.procfs/--path.sysfs/--path.rootfs) so tests read fixture trees.
type NodeHostOptions struct {
	// Proc and Sys are the host's procfs and sysfs (host-wide facts: processes, PSI, load, memory, disks).
	Proc, Sys string
	// Root is the host's root, for dev/kmsg and var/log (the kernel log).
	Root string
	// NetProc is the procfs whose net/ and sys/net/ describe the node's network namespace (the agent's
	// own /proc in a host-network pod; the host's procfs would show its pid 1's namespace instead).
	NetProc string
	// NetSys is the sysfs whose class/net lists the node's network namespace's interfaces (the agent's own
	// /sys in a host-network pod, which the runtime mounts in the pod's — the node's — namespace; the host's
	// sysfs shows the namespace of whoever mounted it: on a node that is a network namespace of its host, as
	// the lab's are, not the node's). "" reads Sys.
	NetSys string
	// KubeProxy is kube-proxy's metrics base URL ("" skips it).
	KubeProxy string
	// Dirs to describe and probe, by role ("kubelet", "runtime"): directories on the disks in question as
	// the agent sees them (in the DaemonSet: an emptyDir, which lives under the kubelet's root dir, and
	// the container's own writable layer, which lives under the runtime's).
	Dirs map[string]string
	// ProbeBytes is the size of each directory's sync-write probe (0: none), written in 2,300-byte
	// writes each followed by fdatasync (etcd's fio recipe's shape, made short).
	ProbeBytes int64
	// Window is how long D-state processes are watched (sampled every Window/5); pressure (PSI) is measured
	// over the same watch, from its "total" stall counters read at the start and at the end.
	Window time.Duration
	// PressureAfter is the procfs whose pressure/ is read at the watch's end (default Proc; a fixture tree
	// gives a second snapshot there).
	PressureAfter string
	// NodeName is recorded as given (the DaemonSet passes spec.nodeName).
	NodeName string
	// DNS runs the eBPF tracers over the read: DNS queries (attached to the host's cgroup v2 root, found in
	// Proc's pid 1 mountinfo under Root), NodeHost.DNS, and TCP connects (a tracepoint), NodeHost.Connects; or
	// why not in Unread.
	DNS bool
}

// NodeHost is what the node agent reports of one node.
type NodeHost struct {
	Node string `json:"node,omitempty"`
	// BootID is the kernel's boot id (proc's sys/kernel/random/boot_id; "" if unreadable): nodes that report the
	// same one share a kernel (the lab's real nodes are network namespaces of one host), whose sockets each of
	// their DNS tracers sees.
	BootID string `json:"boot_id,omitempty"`
	// Net: interfaces, conntrack and the neighbour table against gc_thresh1/2/3, kube-proxy.
	Net    *NodeNet   `json:"net"`
	Kernel *KernelLog `json:"kernel_log,omitempty"`
	DState *DState    `json:"d_state,omitempty"`
	// PSI by resource ("cpu", "io", "memory"), absent where the kernel has none.
	PSI   map[string]PSIPair `json:"psi,omitempty"`
	Disks []BlockDev         `json:"disks,omitempty"`
	// Sandbox is the runtime's pause image; Present is filled in by the measurement from the node's status.
	Sandbox *Sandbox    `json:"sandbox,omitempty"`
	Sync    []SyncProbe `json:"sync,omitempty"`
	// DNS is every client's DNS queries over the agent's read (with NodeHostOptions.DNS, where eBPF can).
	DNS *DNSReport `json:"dns,omitempty"`
	// Connects is every client's TCP connects over the agent's read (with NodeHostOptions.DNS, where eBPF can).
	Connects *ConnectReport `json:"connects,omitempty"`
	CPUs     int            `json:"cpus"`
	Load     *LoadAvg       `json:"load,omitempty"`
	// MemTotal and MemAvailable in bytes.
	MemTotal     int64 `json:"mem_total_bytes"`
	MemAvailable int64 `json:"mem_available_bytes"`
	// Unread says what could not be read and why (not an error: it is reported).
	Unread       []string `json:"unread,omitempty"`
	TookSeconds  float64  `json:"took_seconds"`
	AgentVersion string   `json:"agent_version,omitempty"`
	// At is when the read ended (the node's clock, UTC): how old a report of an agent kept running is.
	At time.Time `json:"at,omitzero"`
}

// PSIPair is one resource's pressure: the share of time some task (Some) or every non-idle task (Full)
// stalled on it, averaged by the kernel over 10 and 60 s, and over the agent's own watch (Window: the
// growth of the kernel's stall counter "total" over WindowSeconds), in percent.
type PSIPair struct {
	SomeAvg10     float64 `json:"some_avg10"`
	SomeAvg60     float64 `json:"some_avg60"`
	FullAvg10     float64 `json:"full_avg10"`
	FullAvg60     float64 `json:"full_avg60"`
	SomeWindow    float64 `json:"some_window"`
	FullWindow    float64 `json:"full_window"`
	WindowSeconds float64 `json:"window_seconds"`
	// totals at the watch's start (µs), kept until its end.
	someTotal, fullTotal uint64
}

// SyncProbe is a short sequential write+fdatasync run in one role's directory.
type SyncProbe struct {
	Role  string  `json:"role"`
	Dir   string  `json:"dir"`
	Bytes int64   `json:"bytes"`
	N     int     `json:"n"`
	P50   float64 `json:"p50_seconds"`
	P99   float64 `json:"p99_seconds"`
	Max   float64 `json:"max_seconds"`
}

// LoadAvg is /proc/loadavg's three averages (procfs's, as hostfs reads it).
type LoadAvg = hostfs.LoadAvg

// SyncBlock is the probe's write size: etcd's fio recipe's (about one WAL entry).
const SyncBlock = 2300

// ReadNodeHost reads everything once (the D-state watch and the sync probes take their time, bounded by
// Window and ProbeBytes). What cannot be read is listed in Unread.
func ReadNodeHost(ctx context.Context, o NodeHostOptions) *NodeHost {
	start := time.Now()
	h := &NodeHost{Node: o.NodeName}
	if b, err := os.ReadFile(filepath.Join(o.Proc, "sys", "kernel", "random", "boot_id")); err == nil {
		h.BootID = strings.TrimSpace(string(b))
	}
	unread := func(what string, err error) { h.Unread = append(h.Unread, fmt.Sprintf("%s: %v", what, err)) }
	window := o.Window
	if window <= 0 {
		window = time.Second
	}
	if o.DNS {
		// Over the whole read (the D-state watch included), so it adds nothing to the agent's time.
		if w, err := startDNSWatch(ctx, o.Proc, o.Root); err != nil {
			unread(DNSUnread, err)
		} else {
			defer func() {
				rep, err := w.stop()
				if err != nil {
					unread(DNSUnread, err)
				}
				h.DNS = rep
				h.TookSeconds = time.Since(start).Seconds()
			}()
		}
		if w, err := startConnectWatch(ctx); err != nil {
			unread(ConnectsUnread, err)
		} else {
			defer func() {
				rep, err := w.stop()
				if err != nil {
					unread(ConnectsUnread, err)
				}
				h.Connects = rep
			}()
		}
	}
	netSys := o.NetSys
	if netSys == "" {
		netSys = o.Sys
	}
	h.Net = ReadNodeNet(ctx, NodeNetRoots{Proc: o.NetProc, Sys: netSys, KubeProxy: o.KubeProxy})
	h.Unread = append(h.Unread, h.Net.Unread...)
	h.Net.Unread = nil
	host := hostfs.FS{Proc: o.Proc, Sys: o.Sys, Root: o.Root}
	if k, err := readKernelLog(host); err != nil {
		unread("kernel log", err)
	} else {
		h.Kernel = &k
	}
	if n, err := host.OnlineCPUs(); err != nil {
		unread("cpus", err)
	} else {
		h.CPUs = n
	}
	if l, err := host.LoadAvg(); err != nil {
		unread("load", err)
	} else {
		h.Load = l
	}
	if total, avail, err := host.Memory(); err != nil {
		unread("memory", err)
	} else {
		h.MemTotal, h.MemAvailable = total, avail
	}
	if sb, err := readSandbox(o.Proc); err != nil {
		unread("sandbox image", err)
	} else {
		h.Sandbox = sb
	}
	h.readDisks(ctx, o, unread)
	psiStart := time.Now()
	for _, res := range psiResources {
		some, full, err := readPSI(o.Proc, res)
		if err != nil {
			unread("pressure "+res, err)
			continue
		}
		if h.PSI == nil {
			h.PSI = map[string]PSIPair{}
		}
		h.PSI[res] = PSIPair{SomeAvg10: some.Avg10, SomeAvg60: some.Avg60, FullAvg10: full.Avg10, FullAvg60: full.Avg60,
			someTotal: some.TotalMicros, fullTotal: full.TotalMicros}
	}
	if d, err := SampleDState(ctx, o.Proc, 6, window/5); err != nil {
		unread("D-state processes", err)
	} else {
		h.DState = d
	}
	after := o.PressureAfter
	if after == "" {
		after = o.Proc
	}
	elapsed := time.Since(psiStart)
	if h.Net.ConntrackStat != nil {
		if st, err := (hostfs.FS{Proc: after}).ConntrackStat(); err != nil {
			unread("conntrack statistics at the watch's end", err)
		} else {
			h.Net.ConntrackStatWindow = growth(h.Net.ConntrackStat, st)
		}
	}
	for res, p := range h.PSI {
		some, full, err := readPSI(after, res)
		if err != nil {
			unread("pressure "+res+" at the watch's end", err)
			continue
		}
		p.WindowSeconds = elapsed.Seconds()
		p.SomeWindow, p.FullWindow = stallShare(p.someTotal, some.TotalMicros, elapsed), stallShare(p.fullTotal, full.TotalMicros, elapsed)
		h.PSI[res] = p
	}
	h.TookSeconds, h.At = time.Since(start).Seconds(), time.Now().UTC()
	return h
}

// DNSUnread names the Unread entry of a DNS watch that could not run (the measurement reads it as "could not
// measure").
const DNSUnread = "DNS queries (eBPF)"

var psiResources = []string{"cpu", "io", "memory"}

func readPSI(proc, res string) (some, full hostfs.PSI, err error) {
	return hostfs.FS{Proc: proc}.Pressure(res)
}

// stallShare is the share of elapsed (percent) a PSI stall counter grew by from a to b: at most 100 (the
// counter is wall time stalled), 0 if it went backwards.
func stallShare(a, b uint64, elapsed time.Duration) float64 {
	if b <= a || elapsed <= 0 {
		return 0
	}
	return min(100, float64(b-a)/float64(elapsed.Microseconds())*100)
}

// readDisks describes each role's device and runs its sync probe.
func (h *NodeHost) readDisks(ctx context.Context, o NodeHostOptions, unread func(string, error)) {
	if len(o.Dirs) == 0 {
		return
	}
	self, err := hostfs.Host().Mounts("self")
	if err != nil {
		unread("own mounts", err)
	}
	host, err := hostfs.FS{Proc: o.Proc}.Mounts("1")
	if err != nil {
		unread("host mounts", err)
	}
	for _, role := range []string{"kubelet", "runtime"} {
		dir := o.Dirs[role]
		if dir == "" {
			continue
		}
		maj, mnr, fstype, err := DirDevice(dir, self, host)
		if err != nil {
			unread(role+" disk", err)
			continue
		}
		var d BlockDev
		if maj == 0 {
			d = BlockDev{Dev: fmt.Sprintf("%d:%d", maj, mnr), Virtual: true}
		} else if d, err = ReadBlockDev(o.Sys, maj, mnr); err != nil {
			unread(role+" disk", err)
			continue
		}
		d.Role, d.Dir, d.FSType = role, dir, fstype
		h.Disks = append(h.Disks, d)
		if o.ProbeBytes <= 0 {
			continue
		}
		r, err := diskprobe.RunSync(ctx, dir, diskprobe.Recipe{Size: max(o.ProbeBytes, SyncBlock), BlockSize: SyncBlock, Blocking: true})
		if err != nil {
			unread(role+" sync probe", err)
			continue
		}
		s := r.Summary()
		h.Sync = append(h.Sync, SyncProbe{Role: role, Dir: dir, Bytes: r.Bytes, N: s.N, P50: s.P50.Seconds(), P99: s.P99.Seconds(), Max: s.Max.Seconds()})
	}
}
