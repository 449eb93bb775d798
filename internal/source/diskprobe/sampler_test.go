package diskprobe

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const diskstatsLine = "%4d %7d %s %d 0 %d 0 %d 0 %d 0 0 %d %d 0 0 0 0 %d 0\n"

// A proc tree in a temporary directory whose diskstats names the device the test's own directory is on.
func fakeProc(t *testing.T) (root, proc string, write func(reads, writes, sectorsW, ioTicks, ioSome uint64, dstate int)) {
	root = t.TempDir()
	proc = t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(proc, "pressure"), 0o755)
	write = func(reads, writes, sectorsW, ioTicks, ioSome uint64, dstate int) {
		ds := fmt.Sprintf(diskstatsLine, 7, 99, "loop99", 1, 2, 3, 4, 5, 6, 7) +
			fmt.Sprintf(diskstatsLine, unix.Major(st.Dev), unix.Minor(st.Dev), "testdev", reads, reads*8, writes, sectorsW, ioTicks, ioTicks, writes)
		if err := os.WriteFile(filepath.Join(proc, "diskstats"), []byte(ds), 0o644); err != nil {
			t.Fatal(err)
		}
		psi := fmt.Sprintf("some avg10=1.00 avg60=0.50 avg300=0.10 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", ioSome, ioSome/2)
		os.WriteFile(filepath.Join(proc, "pressure", "io"), []byte(psi), 0o644)
		for pid := 1; pid <= 4; pid++ {
			state := "S"
			if pid <= dstate {
				state = "D"
			}
			os.MkdirAll(filepath.Join(proc, fmt.Sprint(pid)), 0o755)
			cmd := "kworker/u4:2 (flush)"
			if pid == 1 {
				cmd = "udevd"
			}
			os.WriteFile(filepath.Join(proc, fmt.Sprint(pid), "stat"), []byte(fmt.Sprintf("%d (%s) %s 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", pid, cmd, state)), 0o644)
		}
	}
	return root, proc, write
}

func TestSampler(t *testing.T) {
	root, proc, write := fakeProc(t)
	write(100, 1000, 8000, 500, 1_000_000, 0)
	s, err := NewSampler(SamplerOptions{Root: root, Proc: proc, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The clock moves only between the two readings: the probe's own fdatasync time must not count.
	clk := time.Unix(1000, 0)
	s.now = func() time.Time { return clk }
	if s.Device() != "testdev" {
		t.Fatalf("device %q", s.Device())
	}
	if _, err := s.Take(); err != nil {
		t.Fatal(err)
	}
	// One interval later the counters moved: rates are over the time between the two readings.
	clk = clk.Add(2 * time.Second)
	write(300, 1400, 8000+800, 1500, 2_000_000, 3)
	smp, err := s.Take()
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.01+1e-9 {
			t.Errorf("%s = %v, want about %v", name, got, want)
		}
	}
	near("read IOPS", smp.ReadIOPS, 100)
	near("write IOPS", smp.WriteIOPS, 200)
	near("write bytes/s", smp.WriteBytesPS, 800*512/2)
	near("util", smp.UtilPercent, 50)
	near("io some", smp.IOSomePercent, 50)
	near("io full", smp.IOFullPercent, 25)
	if smp.DState != 3 || smp.DStateCommands != "kworker/u4:2 (flush)×2, udevd" {
		t.Errorf("D state %d %q", smp.DState, smp.DStateCommands)
	}
	if math.IsNaN(smp.SyncSeconds) || smp.SyncSeconds <= 0 {
		t.Errorf("probe %v", smp.SyncSeconds)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("probe file left: %v", left)
	}
}

func TestSamplerRun(t *testing.T) {
	root, proc, write := fakeProc(t)
	write(1, 1, 1, 1, 1, 0)
	s, err := NewSampler(SamplerOptions{Root: root, Proc: proc, Dir: "/", Interval: 10 * time.Millisecond, ProbeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var got []Sample
	err = s.Run(ctx, func(smp Sample) {
		got = append(got, smp)
		if len(got) == 3 {
			cancel()
		}
	})
	if err != nil || len(got) != 3 || !math.IsNaN(got[0].SyncSeconds) {
		t.Fatalf("run: %v, %d samples %+v", err, len(got), got)
	}
	// A broken pressure file is an error, not a zero.
	os.WriteFile(filepath.Join(proc, "pressure", "io"), []byte("some avg10=x"), 0o644)
	if _, err := s.Take(); err == nil {
		t.Error("a broken pressure file read as a sample")
	}
	if _, err := NewSampler(SamplerOptions{Root: root, Proc: proc, Dir: "/missing"}); err == nil {
		t.Error("a missing directory made a sampler")
	}
}
