package diskprobe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// SamplerOptions say what a Sampler watches. Paths are as seen from the host: Root is where the host's
// filesystem is mounted (node_exporter's --path.rootfs: "/" on the host, "/host" in an agent pod).
type SamplerOptions struct {
	// Root is the host's root (default "/"); /proc is read under it unless Proc is set.
	Root string
	// Proc overrides the proc directory (default Root/proc).
	Proc string
	// Dir is a directory on the disk to watch (the container runtime's, e.g. /var/lib/containerd), under Root.
	Dir string
	// Interval between samples (default 1 s).
	Interval time.Duration
	// ProbeBytes is the size of each probe write (default 4 KiB); 0 probes with the default, <0 not at all.
	ProbeBytes int
}

// Sample is one interval's view of the disk and the node.
type Sample struct {
	T time.Time `json:"t"`
	// Device is the diskstats name of the sampled disk ("" when the directory is on none).
	Device string `json:"device,omitempty"`
	// SyncSeconds is one ProbeBytes write plus fdatasync on Dir's disk; NaN when not probed.
	SyncSeconds float64 `json:"syncSeconds"`
	// Rates over the interval from /proc/diskstats (zero without a device).
	ReadIOPS       float64 `json:"readIOPS"`
	WriteIOPS      float64 `json:"writeIOPS"`
	ReadBytesPS    float64 `json:"readBytesPerSecond"`
	WriteBytesPS   float64 `json:"writeBytesPerSecond"`
	UtilPercent    float64 `json:"utilPercent"`
	IOSomePercent  float64 `json:"ioSomePercent"`
	IOFullPercent  float64 `json:"ioFullPercent"`
	DState         int     `json:"dState"`
	DStateCommands string  `json:"dStateCommands,omitempty"`
}

// Sampler takes Samples.
type Sampler struct {
	o      SamplerOptions
	dev    string // diskstats name, "" when Dir is on no block device
	probe  *os.File
	off    int64
	buf    []byte
	prevDS *hostfs.DiskStats
	prevIO [2]uint64
	prevT  time.Time
	hasPSI bool
	// now is the clock rates are computed with (time.Now; tests step it).
	now func() time.Time
}

// NewSampler resolves Dir's block device and opens the probe file.
func NewSampler(o SamplerOptions) (*Sampler, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Proc == "" {
		o.Proc = filepath.Join(o.Root, "proc")
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.ProbeBytes == 0 {
		o.ProbeBytes = 4096
	}
	s := &Sampler{o: o, now: time.Now}
	dir := filepath.Join(o.Root, o.Dir)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("disk sampler: %w", err)
	}
	all, err := s.fs().DiskStats()
	if err != nil {
		return nil, fmt.Errorf("disk sampler: %w", err)
	}
	for _, d := range all {
		if d.Major == unix.Major(st.Dev) && d.Minor == unix.Minor(st.Dev) {
			s.dev = d.Name
		}
	}
	if o.ProbeBytes > 0 {
		f, err := os.OpenFile(filepath.Join(dir, ".kubeslow-probe-"+strconv.Itoa(os.Getpid())), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("disk sampler probe: %w", err)
		}
		s.probe, s.buf = f, make([]byte, o.ProbeBytes)
	}
	return s, nil
}

// Device is the diskstats name of Dir's device ("" when it is on none, e.g. overlay or tmpfs).
func (s *Sampler) Device() string { return s.dev }

// Close removes the probe file.
func (s *Sampler) Close() error {
	if s.probe == nil {
		return nil
	}
	name := s.probe.Name()
	err := s.probe.Close()
	return errors.Join(err, os.Remove(name))
}

// Run samples every Interval until ctx ends, handing each sample to emit. The first sample comes one
// interval after the start (rates need two readings). A sample whose files could not be read is an error.
func (s *Sampler) Run(ctx context.Context, emit func(Sample)) error {
	if _, err := s.Take(); err != nil {
		return err
	}
	tk := time.NewTicker(s.o.Interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tk.C:
			smp, err := s.Take()
			if err != nil {
				return err
			}
			emit(smp)
		}
	}
}

// Take reads everything once; rates are over the time since the previous Take (zero on the first).
func (s *Sampler) Take() (Sample, error) {
	now := s.now()
	smp := Sample{T: now, Device: s.dev, SyncSeconds: math.NaN()}
	if s.probe != nil {
		t0 := time.Now()
		if _, err := s.probe.WriteAt(s.buf, s.off); err != nil {
			return smp, fmt.Errorf("probe write: %w", err)
		}
		if err := unix.Fdatasync(int(s.probe.Fd())); err != nil {
			return smp, fmt.Errorf("probe fdatasync: %w", err)
		}
		smp.SyncSeconds = time.Since(t0).Seconds()
		// Each write appends: the block is allocated and the size grows, so the fdatasync commits the
		// filesystem's journal as well as the data, as a runtime's new files and etcd's WAL (written into
		// preallocated, unwritten extents) do. A rewrite in place would need only the data block, and skip
		// the journal that the rest of the node's I/O queues on (and, with cgroup v1's per-cgroup blkio
		// throttling, the throttle of the journal's thread). The file is cut back to nothing every 1 MiB.
		s.off += int64(len(s.buf))
		if s.off >= 1<<20 {
			if err := s.probe.Truncate(0); err != nil {
				return smp, fmt.Errorf("probe truncate: %w", err)
			}
			s.off = 0
		}
	}
	dt := now.Sub(s.prevT).Seconds()
	first := s.prevT.IsZero()
	s.prevT = now
	if s.dev != "" {
		all, err := s.fs().DiskStats()
		if err != nil {
			return smp, err
		}
		for i := range all {
			if all[i].Name != s.dev {
				continue
			}
			d := all[i]
			if p := s.prevDS; p != nil && !first && dt > 0 {
				rate := func(a, b uint64) float64 {
					if a < b {
						return 0 // counter reset (device re-attached)
					}
					return float64(a-b) / dt
				}
				smp.ReadIOPS, smp.WriteIOPS = rate(d.ReadsDone, p.ReadsDone), rate(d.WritesDone, p.WritesDone)
				smp.ReadBytesPS, smp.WriteBytesPS = 512*rate(d.SectorsRead, p.SectorsRead), 512*rate(d.SectorsWrite, p.SectorsWrite)
				smp.UtilPercent = min(100, rate(d.IOTicks, p.IOTicks)/10)
			}
			s.prevDS = &d
		}
	}
	if _, err := os.Stat(filepath.Join(s.o.Proc, "pressure", "io")); err == nil {
		some, full, err := s.fs().Pressure("io")
		if err != nil {
			return smp, err
		}
		if s.hasPSI && !first && dt > 0 {
			pct := func(a, b uint64) float64 {
				if a < b {
					return 0
				}
				return min(100, float64(a-b)/(dt*1e6)*100)
			}
			smp.IOSomePercent, smp.IOFullPercent = pct(some.TotalMicros, s.prevIO[0]), pct(full.TotalMicros, s.prevIO[1])
		}
		s.prevIO, s.hasPSI = [2]uint64{some.TotalMicros, full.TotalMicros}, true
	}
	n, cmds, err := dStateTasks(s.o.Proc)
	if err != nil {
		return smp, err
	}
	smp.DState, smp.DStateCommands = n, cmds
	return smp, nil
}

// fs is the sampler's proc root.
func (s *Sampler) fs() hostfs.FS { return hostfs.FS{Proc: s.o.Proc} }

// dStateTasks counts the processes in D state and names the most common commands.
func dStateTasks(proc string) (int, string, error) {
	tasks, err := hostfs.FS{Proc: proc}.DStateTasks()
	if err != nil {
		return 0, "", err
	}
	byCmd := map[string]int{}
	for _, c := range tasks {
		byCmd[c]++
	}
	cmds := make([]string, 0, len(byCmd))
	for c := range byCmd {
		cmds = append(cmds, c)
	}
	sort.Slice(cmds, func(i, j int) bool {
		if byCmd[cmds[i]] != byCmd[cmds[j]] {
			return byCmd[cmds[i]] > byCmd[cmds[j]]
		}
		return cmds[i] < cmds[j]
	})
	out := ""
	for i, c := range cmds {
		if i == 3 {
			break
		}
		if out != "" {
			out += ", "
		}
		out += c
		if byCmd[c] > 1 {
			out += "×" + strconv.Itoa(byCmd[c])
		}
	}
	return len(tasks), out, nil
}
