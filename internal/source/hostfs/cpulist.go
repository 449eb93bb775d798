package hostfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A sysfs CPU list (procfs's sysfs package reads CPU directories, not the online list).

// OnlineCPUs counts sys/devices/system/cpu/online's CPUs.
func (f FS) OnlineCPUs() (int, error) {
	b, err := os.ReadFile(filepath.Join(f.Sys, "devices/system/cpu/online"))
	if err != nil {
		return 0, err
	}
	return ParseCPUList(b)
}

// ParseCPUList counts the CPUs of a kernel CPU list (/sys/devices/system/cpu/online: "0-3,8,10-11").
func ParseCPUList(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, fmt.Errorf("cpu list: empty")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("cpu list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return 0, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		n += b - a + 1
		if n > 1<<20 {
			return 0, fmt.Errorf("cpu list %q: too many CPUs", s)
		}
	}
	return n, nil
}
