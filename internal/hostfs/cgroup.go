package hostfs

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// CPUStat is what cgroup v1's cpu.stat counts: CFS periods with runnable tasks, those in which the quota ran
// out, and the time the group spent throttled.
type CPUStat struct {
	Periods, Throttled int64
	ThrottledNanos     int64
}

// ParseCPUStat reads cgroup v1's cpu.stat ("nr_periods N" lines; unknown keys are ignored, a malformed
// value is an error).
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		var dst *int64
		switch f[0] {
		case "nr_periods":
			dst = &s.Periods
		case "nr_throttled":
			dst = &s.Throttled
		case "throttled_time":
			dst = &s.ThrottledNanos
		default:
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || v < 0 {
			return CPUStat{}, fmt.Errorf("cpu.stat %s: %q is not a count", f[0], f[1])
		}
		*dst = v
	}
	return s, sc.Err()
}

// ParseCPUAcctUsage reads cgroup v1's cpuacct.usage: the group's CPU time in nanoseconds.
func ParseCPUAcctUsage(b []byte) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("cpuacct.usage: %q is not a count of nanoseconds", strings.TrimSpace(string(b)))
	}
	return v, nil
}
