package agent

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

func readFixture(t *testing.T, name string) *NodeHost {
	t.Helper()
	r := filepath.Join("testdata/hosts", name)
	return ReadNodeHost(context.Background(), NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root", Window: 50 * time.Millisecond})
}

func TestReadNodeHostHealthy(t *testing.T) {
	h := readFixture(t, "healthy")
	if len(h.Unread) != 0 {
		t.Errorf("unread: %v", h.Unread)
	}
	if h.Net.Neighbours != 2 || h.Net.NeighThresh1 != 128 || h.Net.NeighThresh2 != 512 || h.Net.NeighThresh3 != 1024 {
		t.Errorf("neighbours %d vs %d/%d/%d", h.Net.Neighbours, h.Net.NeighThresh1, h.Net.NeighThresh2, h.Net.NeighThresh3)
	}
	if h.Kernel == nil || h.Kernel.Source != "/var/log/kern.log" || h.Kernel.Lines != 2 || len(h.Kernel.Counts) != 0 {
		t.Errorf("kernel log %+v", h.Kernel)
	}
	if h.DState == nil || h.DState.Samples != 6 || h.DState.Max != 0 {
		t.Errorf("D state %+v", h.DState)
	}
	if h.CPUs != 2 || h.Load == nil || h.Load.Load1 != 0.52 || h.MemTotal != 24683656*1024 || h.MemAvailable != 23004728*1024 {
		t.Errorf("cpus %d load %+v mem %d/%d", h.CPUs, h.Load, h.MemAvailable, h.MemTotal)
	}
	if io := h.PSI["io"]; io.SomeAvg10 != 0.59 || io.SomeAvg60 != 0.42 || len(h.PSI) != 3 {
		t.Errorf("psi %+v", h.PSI)
	}
}

func TestReadNodeHostFaults(t *testing.T) {
	h := readFixture(t, "neigh-overflow")
	if h.Net.Neighbours != 1024 || h.Kernel.Counts[KernNeighOverflow] != 3 || h.Kernel.Counts[KernConntrackFull] != 1 ||
		!strings.Contains(h.Kernel.Newest[KernNeighOverflow], "neighbor table overflow") || h.Net.ConntrackEntries != 261000 {
		t.Errorf("neighbour overflow: %d entries, kernel %+v, conntrack %d", h.Net.Neighbours, h.Kernel, h.Net.ConntrackEntries)
	}
	h = readFixture(t, "hung-io")
	if h.DState.Max != 3 || h.DState.Persistent != 3 || len(h.DState.Procs) != 3 || h.DState.Procs[0].Samples != 6 || h.DState.Procs[0].Seconds <= 0 {
		t.Errorf("D state %+v", h.DState)
	}
	var comms []string
	for _, p := range h.DState.Procs {
		comms = append(comms, p.Comm)
	}
	if strings.Join(comms, ",") != "kworker/u4:2+flush-254:0,udevd,dd" {
		t.Errorf("D-state commands %v (by pid)", comms)
	}
	if h.Kernel.Counts[KernHungTask] != 2 || h.Kernel.Counts[KernOOMKill] != 1 || !strings.Contains(h.Kernel.Newest[KernHungTask], "udevd:231") {
		t.Errorf("kernel %+v", h.Kernel)
	}
	if io := h.PSI["io"]; io.FullAvg60 != 31.7 || io.SomeAvg10 != 61.2 {
		t.Errorf("psi io %+v", io)
	}
}

// TestPressureOverTheWatch: pressure is the growth of PSI's stall counters over the agent's own watch, not
// the kernel's avg60 (which holds the minute before): a host whose counters stand still has none whatever
// its averages say.
func TestPressureOverTheWatch(t *testing.T) {
	if got := stallShare(1000, 501000, time.Second); got != 50 {
		t.Errorf("0.5 s stalled in 1 s: %v%%", got)
	}
	if stallShare(5, 4, time.Second) != 0 || stallShare(0, 5e6, time.Second) != 100 || stallShare(0, 5, 0) != 0 {
		t.Error("stallShare bounds")
	}
	r := "testdata/hosts/hung-io"
	o := NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root", Window: 10 * time.Millisecond}
	still := ReadNodeHost(context.Background(), o).PSI["io"]
	if still.FullAvg60 != 31.7 || still.FullWindow != 0 || still.WindowSeconds <= 0 {
		t.Errorf("counters standing still: %+v", still)
	}
	o.PressureAfter = r + "/proc-after" // io full grew by 0.8 s during a watch of ~10 ms
	if io := ReadNodeHost(context.Background(), o).PSI["io"]; io.FullWindow != 100 || io.SomeWindow != 100 {
		t.Errorf("counters grown: %+v", io)
	}
}

func TestReadNodeHostMissing(t *testing.T) {
	d := t.TempDir()
	h := ReadNodeHost(context.Background(), NodeHostOptions{Proc: d, NetProc: d, Sys: d, Root: d, Window: 10 * time.Millisecond})
	joined := strings.Join(h.Unread, "\n")
	for _, want := range []string{"kernel log", "pressure io", "cpus", "load", "memory", "conntrack", "neighbours"} {
		if !strings.Contains(joined, want) {
			t.Errorf("nothing readable, yet %q is not listed as unread: %v", want, h.Unread)
		}
	}
	if h.Kernel != nil || h.Load != nil || h.PSI != nil {
		t.Errorf("values from nowhere: %+v", h)
	}
}

func TestReadBlockDev(t *testing.T) {
	sys := "testdata/sysfs-disks/sys"
	hdd, err := ReadBlockDev(sys, 8, 1)
	if err != nil || hdd.Name != "sda" || !hdd.Rotational || hdd.Scheduler != "bfq" || hdd.Model != "ST4000DM004-2CV1" || hdd.Driver != "sd" ||
		hdd.SizeBytes != 7814037168*512 {
		t.Errorf("HDD partition: %+v %v", hdd, err)
	}
	ssd, err := ReadBlockDev(sys, 259, 0)
	if err != nil || ssd.Rotational || ssd.Scheduler != "none" || ssd.Model != "Samsung SSD 980 PRO 1TB" {
		t.Errorf("NVMe: %+v %v", ssd, err)
	}
	vd, err := ReadBlockDev(sys, 254, 0)
	if err != nil || !vd.Rotational || vd.Driver != "virtio_blk" || vd.Scheduler != "mq-deadline" {
		t.Errorf("virtio: %+v %v", vd, err)
	}
	if _, err := ReadBlockDev(sys, 1, 7); err == nil {
		t.Error("unknown device: no error")
	}
}

func TestDirDevice(t *testing.T) {
	dir := t.TempDir()
	self := []hostfs.Mount{{Major: 0, Minor: 50, Point: "/", FSType: "overlay", Super: map[string]string{"upperdir": "/var/lib/containerd/snap/9/fs"}}}
	host := []hostfs.Mount{{Major: 254, Minor: 0, Point: "/", FSType: "ext4"}, {Major: 8, Minor: 1, Point: "/var/lib/containerd", FSType: "xfs"}}
	maj, mnr, fs, err := DirDevice(dir, self, host)
	if err != nil || maj != 8 || mnr != 1 || fs != "xfs" {
		t.Errorf("overlay root followed to %d:%d %s, %v; want 8:1 xfs", maj, mnr, fs, err)
	}
	self[0].Super = nil
	if _, _, _, err := DirDevice(dir, self, host); err == nil {
		t.Error("overlay without upperdir: no error")
	}
}

func TestParsers(t *testing.T) {
	r, err := hostfs.ParseKmsgRecord([]byte("4,1234,5130000001,-;neighbour: arp_cache: neighbor table overflow!\n SUBSYSTEM=net\n"))
	if err != nil || r.Seq != 1234 || r.Since != 5130000001*time.Microsecond || ClassifyKernelLine(r.Msg) != KernNeighOverflow {
		t.Errorf("kmsg %+v %v", r, err)
	}
	k, err := ScanKmsg(&records{recs: []string{"6,1,1000000,-;hello", "3,2,2000000,-;INFO: task dd:99 blocked for more than 122 seconds.", "garbage"}}, 3*time.Second)
	if err != nil || k.Lines != 2 || k.Unreadable != 1 || k.Counts[KernHungTask] != 1 || k.NewestAgoSeconds[KernHungTask] != 1 {
		t.Errorf("ScanKmsg %+v %v", k, err)
	}
	// A log file's lines are aged by the kernel's own stamp against the uptime; a stamp past the uptime (an
	// earlier boot) or no stamp leaves the age unknown.
	log := "Nov 23 17:03:11 node-1 kernel: [ 5130.000001] neighbour: arp_cache: neighbor table overflow!\n" +
		"Nov 23 17:05:40 node-1 kernel: [ 9279.5] INFO: task kworker/u4:2:98 blocked for more than 120 seconds.\n" +
		"Nov 23 17:06:00 node-1 kernel: nf_conntrack: table full, dropping packet\n"
	k, err = ScanKernelLogFile(strings.NewReader(log), "/var/log/kern.log", 8130*time.Second)
	if err != nil || k.Lines != 3 || math.Abs(k.NewestAgoSeconds[KernNeighOverflow]-3000) > 0.01 {
		t.Errorf("kern.log %+v %v", k, err)
	}
	if _, ok := k.NewestAgoSeconds[KernHungTask]; ok {
		t.Errorf("a stamp past the uptime aged: %+v", k.NewestAgoSeconds)
	}
	if _, ok := k.NewestAgoSeconds[KernConntrackFull]; ok || k.Counts[KernConntrackFull] != 1 {
		t.Errorf("a line without a stamp aged: %+v", k)
	}
}

// records returns one kmsg record per Read, then io.EOF, as /dev/kmsg does.
type records struct{ recs []string }

func (r *records) Read(b []byte) (int, error) {
	if len(r.recs) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.recs[0])
	r.recs = r.recs[1:]
	return n, nil
}

// TestKernelLogBadLines: a line too long to be a kernel message is counted and skipped, and the lines after
// it are read (a bufio.Scanner stopped there, losing the rest of the log).
func TestKernelLogBadLines(t *testing.T) {
	log := "kernel: a\n" + strings.Repeat("x", hostfs.MaxKernelLine+10) + "\nkernel: INFO: task dd:99 blocked for more than 122 seconds.\r\nlast"
	k, err := ScanKernelLogFile(strings.NewReader(log), "f", 0)
	if err != nil || k.Lines != 3 || k.Unreadable != 1 || k.Counts[KernHungTask] != 1 || strings.HasSuffix(k.Newest[KernHungTask], "\r") {
		t.Fatalf("%+v %v", k, err)
	}
}
