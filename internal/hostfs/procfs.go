// Package hostfs parses the kernel's text files (/proc and cgroup files) that kubeslow reads on a host: the node
// agent, the disk sampler and the lab's exporter all use these parsers, so they live below every one of them.
package hostfs

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Parsers of the kernel's text files the sampler reads, split from the I/O so tests and fuzzing feed them
// bytes (node_exporter's layout).

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

// ParseDiskStats parses /proc/diskstats.
func ParseDiskStats(b []byte) ([]DiskStats, error) {
	var out []DiskStats
	sc := bufio.NewScanner(bytes.NewReader(b))
	for ln := 1; sc.Scan(); ln++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 14 {
			return nil, fmt.Errorf("diskstats line %d: %d fields, want at least 14", ln, len(f))
		}
		var dev [2]uint64
		for i := range dev {
			v, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("diskstats line %d device number: %w", ln, err)
			}
			dev[i] = v
		}
		// st[k-1] is statistics field k of iostats.rst (1 reads completed ... 11 weighted ms, 16 flushes).
		st := make([]uint64, len(f)-3)
		for i := range st {
			v, err := strconv.ParseUint(f[i+3], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("diskstats line %d field %d: %w", ln, i+4, err)
			}
			st[i] = v
		}
		d := DiskStats{Major: uint32(dev[0]), Minor: uint32(dev[1]), Name: f[2],
			ReadsDone: st[0], SectorsRead: st[2], WritesDone: st[4], SectorsWrite: st[6], IOTicks: st[9], WeightedTicks: st[10]}
		if len(st) >= 16 {
			d.FlushesDone = st[15]
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

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

// ProcState returns the state letter of a /proc/<pid>/stat line ("R", "S", "D"...): the field after the
// command name, which is in parentheses and may itself hold spaces and parentheses.
func ProcState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+1] != ' ' {
		return 0, fmt.Errorf("stat: no state after the command name")
	}
	return stat[i+2], nil
}
