package hostfs

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is a proc tree as a kernel writes it (testdata/proc): this package's readers go through procfs.
var fixture = FS{Proc: "testdata/proc", Sys: "testdata/sys", Root: "testdata/root"}

func TestProcfsReaders(t *testing.T) {
	if l, err := fixture.LoadAvg(); err != nil || *l != (LoadAvg{Load1: 0.52, Load5: 0.58, Load15: 0.59}) {
		t.Errorf("loadavg %+v %v", l, err)
	}
	if total, avail, err := fixture.Memory(); err != nil || total != 24683656*1024 || avail != 20000000*1024 {
		t.Errorf("meminfo %d %d %v", total, avail, err)
	}
	some, full, err := fixture.Pressure("io")
	if err != nil || some.Avg10 != 7.29 || some.TotalMicros != 16798568 || full.Avg60 != 0.01 || full.TotalMicros != 2119283 {
		t.Errorf("io pressure %+v %+v %v", some, full, err)
	}
	// cpu's pressure has no "full" line before Linux 5.13.
	if some, full, err := fixture.Pressure("cpu"); err != nil || some.TotalMicros != 900 || full != (PSI{}) {
		t.Errorf("cpu pressure %+v %+v %v", some, full, err)
	}
	if _, _, err := fixture.Pressure("memory"); err == nil {
		t.Error("a missing pressure file read")
	}
	ds, err := fixture.DiskStats()
	if err != nil || len(ds) != 2 || ds[0] != (DiskStats{Major: 254, Name: "vda", ReadsDone: 25061, SectorsRead: 1787842, WritesDone: 3120087,
		SectorsWrite: 51523240, IOTicks: 1733176, WeightedTicks: 2533688, FlushesDone: 501231}) || ds[1].Name != "loop0" || ds[1].FlushesDone != 0 {
		t.Errorf("diskstats %+v %v", ds, err)
	}
	if st, err := fixture.ProcStat(1); err != nil || st != (ProcStat{State: 'S', Comm: "systemd", StartTick: 17}) {
		t.Errorf("stat of 1: %+v %v", st, err)
	}
	if st, err := fixture.ProcStat(7); err != nil || st != (ProcStat{State: 'D', Comm: "a) b) (c", StartTick: 4242, PPID: 1}) {
		t.Errorf("stat of 7 (parentheses in the command): %+v %v", st, err)
	}
	if _, err := fixture.ProcStat(99); err == nil {
		t.Error("stat of a missing process read")
	}
	if d, err := fixture.DStateTasks(); err != nil || len(d) != 1 || d[7] != "a) b) (c" {
		t.Errorf("D-state tasks %v %v", d, err)
	}
	// An incomplete neighbour (flags 0x0) is an entry of the table all the same.
	if n, err := fixture.Neighbours(); err != nil || n != 2 {
		t.Errorf("neighbours %d %v", n, err)
	}
	if up, err := fixture.Uplink(); err != nil || up != "eth0" {
		t.Errorf("uplink %q %v", up, err)
	}
	// procfs's meminfo parser panics on a line without a value: the reader reports it.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "meminfo"), []byte("MemTotal:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (FS{Proc: bad}).Memory(); err == nil || !strings.Contains(err.Error(), "unparsable") {
		t.Errorf("meminfo without a value: %v", err)
	}
	if _, err := (FS{Proc: "testdata/none"}).LoadAvg(); err == nil {
		t.Error("a missing proc root read")
	}
}

func TestMounts(t *testing.T) {
	for _, pid := range []string{"1", "self"} {
		ms, err := fixture.Mounts(pid)
		if err != nil || len(ms) != 2 || ms[0].Point != "/mnt/with space" || ms[0].Root != "/mnt1" || ms[0].Major != 98 ||
			ms[0].FSType != "ext3" || ms[1].Super["upperdir"] != "/var/lib/containerd/x y/fs" || ms[1].Minor != 50 {
			t.Fatalf("mountinfo of %s: %+v %v", pid, ms, err)
		}
		if m, ok := MountOf(ms, "/mnt/with space/x"); !ok || m.Major != 98 {
			t.Errorf("MountOf: %+v", m)
		}
		if m, ok := MountOf(ms, "/var/lib/kubelet"); !ok || m.FSType != "overlay" {
			t.Errorf("MountOf /: %+v", m)
		}
	}
	if _, err := fixture.Mounts("x"); err == nil {
		t.Error("a pid that is no number read")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"1 2 3 4 5 6 -\n", "36 35 98x0 /a /b rw - ext3 /dev/root rw\n"} {
		if err := os.WriteFile(filepath.Join(dir, "1", "mountinfo"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if ms, err := (FS{Proc: dir}).Mounts("1"); err == nil {
			t.Errorf("%q read as %+v", bad, ms)
		}
	}
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\011y\134z`: "/x\ty\\z", `/a\04`: `/a\04`, `/a\9xyz`: `/a\9xyz`} {
		if got := UnescapeMount(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzMounts feeds mountinfo files to procfs's parser through Mounts (the conversion and unescaping are
// this package's): nothing may panic, and an accepted mount has a type.
func FuzzMounts(f *testing.F) {
	f.Add([]byte("36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"))
	f.Add([]byte("40 27 0:50 / / rw - overlay overlay rw,upperdir=/u\\134\n"))
	f.Add([]byte("1 2 3 4 5 6 -\n"))
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "1", "mountinfo"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		ms, err := FS{Proc: dir}.Mounts("1")
		if err != nil {
			return
		}
		for _, m := range ms {
			if len(UnescapeMount(m.Point)) > len(b) {
				t.Fatalf("unescaping grew %q", m.Point)
			}
		}
		_, _ = MountOf(ms, "/var/lib/kubelet")
	})
}

func TestParseCPUList(t *testing.T) {
	if n, err := fixture.OnlineCPUs(); err != nil || n != 6 {
		t.Errorf("online CPUs: %d %v", n, err)
	}
	if n, err := ParseCPUList([]byte("0-3,8,10-11\n")); err != nil || n != 7 {
		t.Errorf("cpu list: %d %v", n, err)
	}
	for _, bad := range []string{"", "3-1", "a", "0-99999999"} {
		if _, err := ParseCPUList([]byte(bad)); err == nil {
			t.Errorf("cpu list %q: no error", bad)
		}
	}
}

func TestParsePSI(t *testing.T) {
	some, full, err := ParsePSI([]byte("some avg10=7.29 avg60=4.79 avg300=2.26 total=16798568\nfull avg10=0.00 avg60=0.01 avg300=0.00 total=2119283\n"))
	if err != nil || some.Avg10 != 7.29 || some.TotalMicros != 16798568 || full.Avg60 != 0.01 || full.TotalMicros != 2119283 {
		t.Errorf("psi %+v %+v %v", some, full, err)
	}
	for _, bad := range []string{"", "full total=1", "some total=x", "some avg10=101 total=1", "some avg10", "other total=1"} {
		if _, _, err := ParsePSI([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseSmall(f *testing.F) {
	f.Add([]byte("some avg10=7.29 avg60=4.79 avg300=2.26 total=16798568\nfull avg10=0.00 avg60=0.01 avg300=0.00 total=2119283\n"))
	f.Add([]byte("0-3,8,10-11\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if some, _, err := ParsePSI(b); err == nil && (some.Avg10 < 0 || some.Avg10 > 100) {
			t.Fatalf("avg10 %v accepted", some.Avg10)
		}
		if n, err := ParseCPUList(b); err == nil && n <= 0 {
			t.Fatalf("%d CPUs from %q", n, b)
		}
	})
}

// FuzzProcFiles writes the same bytes to every file the procfs-backed readers read and calls them all: none
// may panic (a procfs parser's panic is an error: recoverParse), and what they accept must be consistent.
func FuzzProcFiles(f *testing.F) {
	for _, name := range []string{"loadavg", "meminfo", "pressure/io", "diskstats", "1/stat", "net/arp", "net/route"} {
		b, err := os.ReadFile(filepath.Join("testdata/proc", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("MemTotal:\n"))
	dir := f.TempDir()
	for _, d := range []string{"1", "pressure", "net"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink("1", filepath.Join(dir, "self")); err != nil {
		f.Fatal(err)
	}
	fs := FS{Proc: dir}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, name := range []string{"loadavg", "meminfo", "pressure/io", "diskstats", "1/stat", "1/status", "stat", "net/arp", "net/route"} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if l, err := fs.LoadAvg(); err == nil && (l.Load1 < 0 || l.Load5 < 0 || l.Load15 < 0) {
			t.Fatalf("negative load %+v", l)
		}
		if total, avail, err := fs.Memory(); err == nil && (total < 0 || avail < 0) {
			t.Fatalf("memory %d %d", total, avail)
		}
		_, _, _ = fs.Pressure("io")
		_, _ = fs.DiskStats()
		if st, err := fs.ProcStat(1); err == nil && st.State == 0 {
			t.Fatalf("stat without a state: %+v", st)
		}
		_, _ = fs.DStateTasks()
		if b, err := fs.SelfVmHWM(); err == nil && b == 0 {
			t.Fatal("VmHWM 0 without an error")
		}
		_, _, _ = fs.CPUTimes()
		if n, err := fs.Neighbours(); err == nil && n < 0 {
			t.Fatalf("%d neighbours", n)
		}
		_, _ = fs.Uplink()
	})
}

func FuzzParseKmsgRecord(f *testing.F) {
	for _, s := range []string{"4,1234,5130000001,-;neighbour: arp_cache: neighbor table overflow!\n SUBSYSTEM=net\n", "6,1,0,-;x", ";", "1,2;x", "6,1,99999999999999999999,-;x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseKmsgRecord(b)
		if err == nil && (r.Since < 0 || strings.ContainsRune(r.Msg, '\n')) {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}

// Without a /dev/kmsg under the root, the kernel log is read from var/log/kern.log, each line aged by its
// kernel stamp against proc/uptime.
func TestKernelLog(t *testing.T) {
	if up := fixture.Uptime(); up != 5130500*time.Millisecond {
		t.Fatalf("uptime %v", up)
	}
	var msgs []string
	var ages []time.Duration
	src, n, err := fixture.KernelLog(func(msg string, ago time.Duration) {
		msgs, ages = append(msgs, msg), append(ages, ago)
	})
	if err != nil || src != "/var/log/kern.log" || n != 0 || len(msgs) != 2 || ages[0] != 100*time.Second || ages[1] != -1 {
		t.Fatalf("%s %d %v: %q %v", src, n, err, msgs, ages)
	}
	if _, _, err := (FS{Proc: fixture.Proc, Root: "testdata/none"}).KernelLog(func(string, time.Duration) {}); err == nil {
		t.Error("no kernel log anywhere: no error")
	}
}

// A proc tree written by the test: proc/self/status (VmHWM) and proc/stat (the cpu line) as a kernel writes them.
func TestSelfVmHWMAndCPUTimes(t *testing.T) {
	proc := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(proc, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("42/status", "Name:\tkubeslow\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nPPid:\t1\n"+
		"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nVmPeak:\t 1262020 kB\nVmSize:\t 1261764 kB\nVmHWM:\t   51212 kB\nVmRSS:\t   48000 kB\n"+
		"voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n")
	write("43/status", "Name:\tkthreadd\nTgid:\t43\nPid:\t43\n")
	write("stat", "cpu  100 5 50 800 40 1 2 3 7 0\ncpu0 100 5 50 800 40 1 2 3 7 0\nintr 1 1\nctxt 9\nbtime 1\nprocesses 3\n"+
		"procs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
	fs := FS{Proc: proc}
	for self, want := range map[string]uint64{"42": 51212 * 1024, "43": 0} {
		if err := os.Remove(filepath.Join(proc, "self")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(self, filepath.Join(proc, "self")); err != nil {
			t.Fatal(err)
		}
		b, err := fs.SelfVmHWM()
		if b != want || (err == nil) != (want > 0) {
			t.Errorf("self %s: VmHWM %d, %v; want %d", self, b, err, want)
		}
	}
	if b, err := Host().SelfVmHWM(); err != nil || b == 0 {
		t.Errorf("this process's VmHWM: %d %v", b, err)
	}
	idle, total, err := fs.CPUTimes()
	// In clock ticks of 1/100 s: idle 800+40, total every field.
	if err != nil || math.Abs(idle-8.40) > 1e-9 || math.Abs(total-10.08) > 1e-9 {
		t.Errorf("cpu times: idle %v total %v, %v", idle, total, err)
	}
	write("stat", "cpu x\n")
	if _, _, err := fs.CPUTimes(); err == nil {
		t.Error("an unparsable cpu line read")
	}
}
