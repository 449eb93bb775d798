package hostfs

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ParsePSI is procfs's pressure parser for the files procfs does not read: a cgroup's cpu.pressure, io.pressure
// and memory.pressure (procfs reads only /proc/pressure, and its parser is not exported). It is stricter than
// procfs's: a percentage out of [0, 100] or a missing "some" line is an error.

// PSI is one line ("some" or "full") of a /proc/pressure file.
type PSI struct {
	Avg10, Avg60, Avg300 float64
	// TotalMicros is the cumulative stall time.
	TotalMicros uint64
}

// ParsePSI parses /proc/pressure/io (or cpu, memory): the "some" and "full" lines.
func ParsePSI(b []byte) (some, full PSI, err error) {
	var seenSome bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var p PSI
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return some, full, fmt.Errorf("pressure: %q is not key=value", kv)
			}
			switch k {
			case "total":
				if p.TotalMicros, err = strconv.ParseUint(v, 10, 64); err != nil {
					return some, full, fmt.Errorf("pressure total: %w", err)
				}
			case "avg10", "avg60", "avg300":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || x < 0 || x > 100 {
					return some, full, fmt.Errorf("pressure %s=%q: want a percentage", k, v)
				}
				switch k {
				case "avg10":
					p.Avg10 = x
				case "avg60":
					p.Avg60 = x
				default:
					p.Avg300 = x
				}
			}
		}
		switch f[0] {
		case "some":
			some, seenSome = p, true
		case "full":
			full = p
		default:
			return some, full, fmt.Errorf("pressure: unknown line %q", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return some, full, err
	}
	if !seenSome {
		return some, full, fmt.Errorf("pressure: no \"some\" line")
	}
	return some, full, nil
}
