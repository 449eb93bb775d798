package hostfs

// Parsers of the cgroup files procfs does not read (v1 and v2): cpu.stat, the CPU quota, cpuacct.usage.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUStat is a cgroup's cpu.stat throttling counters (v1: nr_periods, nr_throttled, throttled_time in ns;
// v2: nr_periods, nr_throttled, throttled_usec, and usage_usec).
type CPUStat struct {
	Periods, Throttled uint64
	ThrottledSeconds   float64
	// UsageSeconds is v2's usage_usec (v1 keeps it in cpuacct.usage): -1 when absent.
	UsageSeconds float64
}

// ParseCPUStat parses a cgroup's cpu.stat, v1 or v2.
func ParseCPUStat(b []byte) (CPUStat, error) {
	s := CPUStat{UsageSeconds: -1}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return CPUStat{}, fmt.Errorf("cpu.stat: line %.60q: want \"key value\"", sc.Text())
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return CPUStat{}, fmt.Errorf("cpu.stat %s: %q is not a count", f[0], f[1])
		}
		switch f[0] {
		case "nr_periods":
			s.Periods = v
			seen++
		case "nr_throttled":
			s.Throttled = v
			seen++
		case "throttled_time":
			s.ThrottledSeconds = float64(v) / 1e9
		case "throttled_usec":
			s.ThrottledSeconds = float64(v) / 1e6
		case "usage_usec":
			s.UsageSeconds = float64(v) / 1e6
		}
	}
	if err := sc.Err(); err != nil {
		return CPUStat{}, fmt.Errorf("cpu.stat: %w", err)
	}
	if seen < 2 && s.UsageSeconds < 0 {
		return CPUStat{}, fmt.Errorf("cpu.stat: neither nr_periods/nr_throttled nor usage_usec")
	}
	return s, nil
}

// ParseCPUMax parses cgroup v2's cpu.max ("max 100000" or "50000 100000") into cores (quota/period); 0 is
// no limit.
func ParseCPUMax(b []byte) (float64, error) {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, fmt.Errorf("cpu.max %.40q: want \"quota period\"", b)
	}
	period, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || period == 0 {
		return 0, fmt.Errorf("cpu.max period %q: want a positive count of µs", f[1])
	}
	if f[0] == "max" {
		return 0, nil
	}
	quota, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || quota == 0 {
		return 0, fmt.Errorf("cpu.max quota %q: want \"max\" or a positive count of µs", f[0])
	}
	return float64(quota) / float64(period), nil
}

// ParseCFSQuota reads cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us into cores; a quota of -1 is no
// limit (0).
func ParseCFSQuota(quota, period []byte) (float64, error) {
	q, err := strconv.ParseInt(strings.TrimSpace(string(quota)), 10, 64)
	if err != nil || q == 0 || q < -1 {
		return 0, fmt.Errorf("cpu.cfs_quota_us %.40q: want -1 or a positive count of µs", quota)
	}
	if q == -1 {
		return 0, nil
	}
	p, err := strconv.ParseInt(strings.TrimSpace(string(period)), 10, 64)
	if err != nil || p <= 0 {
		return 0, fmt.Errorf("cpu.cfs_period_us %.40q: want a positive count of µs", period)
	}
	return float64(q) / float64(p), nil
}

// ParseCPUAcctUsage reads cgroup v1's cpuacct.usage: the group's CPU time in nanoseconds.
func ParseCPUAcctUsage(b []byte) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("cpuacct.usage: %q is not a count of nanoseconds", strings.TrimSpace(string(b)))
	}
	return v, nil
}

// CgroupProcs reads a cgroup directory's cgroup.procs (v1 or v2): the PIDs of its processes. A line that is no
// PID is skipped (the file holds none).
func CgroupProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
