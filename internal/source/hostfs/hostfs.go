// Package hostfs reads a host's kernel files for the node agent, the disk sampler and the lab: through
// github.com/prometheus/procfs wherever it parses the file (meminfo, loadavg, /proc/pressure, diskstats, /proc/stat,
// per-process stat and status, mountinfo), and with its own parsers only for what procfs does not cover (a cgroup's
// cpu.stat and pressure files, cpuacct.usage, /sys CPU lists, the kernel log...). It lives below every one of
// its users, so none of them imports another for a parser.
//
// Its roots are node_exporter's --path.procfs, --path.sysfs and --path.rootfs (FS): a containerised agent
// reads the host's /proc mounted at /host/proc, and a test reads a fixture tree under testdata.
package hostfs

import (
	"fmt"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// FS is the roots a host's files are read under.
type FS struct {
	// Proc is procfs's mount point ("/proc", "/host/proc"), Sys sysfs's ("/sys"), Root the host's root
	// filesystem ("/", "/host": its /dev/kmsg and /var/log).
	Proc, Sys, Root string
}

// Host is the FS of the host this process runs on.
func Host() FS { return FS{Proc: "/proc", Sys: "/sys", Root: "/"} }

func (f FS) procfs() (procfs.FS, error) { return procfs.NewFS(f.Proc) }

// LoadAvg is /proc/loadavg's three averages.
type LoadAvg = procfs.LoadAvg

// LoadAvg reads proc/loadavg.
func (f FS) LoadAvg() (l *LoadAvg, err error) {
	defer recoverParse("loadavg", &err)
	fs, err := f.procfs()
	if err != nil {
		return nil, err
	}
	l, err = fs.LoadAvg()
	if err != nil {
		return nil, err
	}
	if l.Load1 < 0 || l.Load5 < 0 || l.Load15 < 0 {
		return nil, fmt.Errorf("loadavg: negative load %+v", *l)
	}
	return l, nil
}

// Memory reads proc/meminfo's MemTotal and MemAvailable, in bytes.
func (f FS) Memory() (total, available int64, err error) {
	defer recoverParse("meminfo", &err)
	fs, err := f.procfs()
	if err != nil {
		return 0, 0, err
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return 0, 0, fmt.Errorf("meminfo: %w", err)
	}
	v := func(p *uint64) int64 {
		if p == nil || *p > 1<<62 {
			return 0
		}
		return int64(*p)
	}
	return v(mi.MemTotalBytes), v(mi.MemAvailableBytes), nil
}

// Pressure reads proc/pressure/<res> (cpu, io, memory): its "some" line and its "full" line (zero where the
// kernel writes none: cpu before 5.13).
func (f FS) Pressure(res string) (some, full PSI, err error) {
	defer recoverParse("pressure", &err)
	fs, err := f.procfs()
	if err != nil {
		return some, full, err
	}
	st, err := fs.PSIStatsForResource(res)
	if err != nil {
		return some, full, err
	}
	if st.Some == nil {
		return some, full, fmt.Errorf("pressure %s: no \"some\" line", res)
	}
	conv := func(l *procfs.PSILine) PSI {
		if l == nil {
			return PSI{}
		}
		return PSI{Avg10: l.Avg10, Avg60: l.Avg60, Avg300: l.Avg300, TotalMicros: l.Total}
	}
	return conv(st.Some), conv(st.Full), nil
}

// DiskStats is one line of /proc/diskstats (Documentation/admin-guide/iostats.rst): cumulative counters.
type DiskStats struct {
	Major, Minor uint32
	Name         string
	ReadsDone    uint64
	SectorsRead  uint64
	WritesDone   uint64
	SectorsWrite uint64
	// IOTicks is the milliseconds spent doing I/O (field 10): its rate is the device's utilisation.
	IOTicks uint64
	// WeightedTicks is field 11, the queue-time integral (ms): its rate is the average queue depth.
	WeightedTicks uint64
	// FlushesDone is field 16 (kernel 5.5+), 0 where absent.
	FlushesDone uint64
}

// DiskStats reads proc/diskstats.
func (f FS) DiskStats() (out []DiskStats, err error) {
	defer recoverParse("diskstats", &err)
	// blockdevice.NewFS wants a sysfs root too, which ProcDiskstats does not read: the proc root stands in.
	fs, err := blockdevice.NewFS(f.Proc, f.Proc)
	if err != nil {
		return nil, err
	}
	all, err := fs.ProcDiskstats()
	if err != nil {
		return nil, fmt.Errorf("diskstats: %w", err)
	}
	out = make([]DiskStats, 0, len(all))
	for _, d := range all {
		out = append(out, DiskStats{Major: d.MajorNumber, Minor: d.MinorNumber, Name: d.DeviceName, ReadsDone: d.ReadIOs,
			SectorsRead: d.ReadSectors, WritesDone: d.WriteIOs, SectorsWrite: d.WriteSectors, IOTicks: d.IOsTotalTicks,
			WeightedTicks: d.WeightedIOTicks, FlushesDone: d.FlushRequestsCompleted})
	}
	return out, nil
}

// ProcStat is what /proc/<pid>/stat says of a process that its readers use.
type ProcStat struct {
	// State is the state letter (R, S, D, Z...), Comm the command name.
	State byte
	Comm  string
	// StartTick is the start time in clock ticks since boot (with the PID, a process's identity).
	StartTick uint64
	// PPID is the parent's PID (0 for the first processes, whose parent is outside the PID namespace).
	PPID int
}

// ProcStat reads proc/<pid>/stat.
func (f FS) ProcStat(pid int) (st ProcStat, err error) {
	defer recoverParse("stat", &err)
	fs, err := f.procfs()
	if err != nil {
		return ProcStat{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return ProcStat{}, err
	}
	return procStat(p)
}

func procStat(p procfs.Proc) (ProcStat, error) {
	st, err := p.Stat()
	if err != nil {
		return ProcStat{}, err
	}
	if st.State == "" {
		return ProcStat{}, fmt.Errorf("/proc/%d/stat: no state", p.PID)
	}
	return ProcStat{State: st.State[0], Comm: st.Comm, StartTick: st.Starttime, PPID: st.PPID}, nil
}

// SelfVmHWM reads proc/self/status's VmHWM: the peak resident set size of the process that reads it, in bytes
// (since it started, or since the peak was last reset through proc/self/clear_refs). A status without it (or
// with a value that is no number) is an error: every process with memory has one.
func (f FS) SelfVmHWM() (b uint64, err error) {
	defer recoverParse("status", &err)
	fs, err := f.procfs()
	if err != nil {
		return 0, err
	}
	p, err := fs.Self()
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, err
	}
	if st.VmHWM == 0 {
		return 0, fmt.Errorf("no VmHWM in %s/self/status", f.Proc)
	}
	return st.VmHWM, nil
}

// CPUTimes reads proc/stat's cpu line, the host's CPU time over all its CPUs since boot, in seconds: idle (idle
// and iowait) and total (every field of the line, guest time included as the kernel also counts it in user).
func (f FS) CPUTimes() (idle, total float64, err error) {
	defer recoverParse("stat", &err)
	fs, err := f.procfs()
	if err != nil {
		return 0, 0, err
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, 0, err
	}
	c := st.CPUTotal
	idle = c.Idle + c.Iowait
	total = c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal + c.Guest + c.GuestNice
	return idle, total, nil
}

// DStateTasks lists the processes in uninterruptible sleep (state D) under proc, by pid with their command.
// A process that exits while they are read is skipped.
func (f FS) DStateTasks() (out map[int]string, err error) {
	defer recoverParse("stat", &err)
	fs, err := f.procfs()
	if err != nil {
		return nil, err
	}
	ps, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	out = map[int]string{}
	for _, p := range ps {
		if st, err := procStat(p); err == nil && st.State == 'D' {
			out[p.PID] = st.Comm
		}
	}
	return out, nil
}
