package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Parsers of the small /proc and /sys files the node agent reads, split from the I/O (node_exporter's
// layout) so that tests and fuzzing feed them bytes.

// LoadAvg is /proc/loadavg's three averages.
type LoadAvg struct{ Load1, Load5, Load15 float64 }

// ParseLoadAvg parses /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
func ParseLoadAvg(b []byte) (LoadAvg, error) {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return LoadAvg{}, fmt.Errorf("loadavg: %d fields, want at least 3", len(f))
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || x < 0 {
			return LoadAvg{}, fmt.Errorf("loadavg field %d %q: want a non-negative number", i+1, f[i])
		}
		v[i] = x
	}
	return LoadAvg{v[0], v[1], v[2]}, nil
}

// ParseMeminfo parses /proc/meminfo into bytes by key ("MemTotal", "MemAvailable"...); "kB" values are
// converted, values without a unit (HugePages_*) are kept as they are.
func ParseMeminfo(b []byte) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			return nil, fmt.Errorf("meminfo: %.40q has no ':'", sc.Text())
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("meminfo %s: no value", k)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("meminfo %s: %q is not a count", k, f[0])
		}
		if len(f) > 1 && f[1] == "kB" {
			if v > 1<<53 {
				return nil, fmt.Errorf("meminfo %s: %d kB is out of range", k, v)
			}
			v *= 1024
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, sc.Err()
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

// Mount is one line of /proc/<pid>/mountinfo (proc(5)).
type Mount struct {
	Major, Minor uint32
	// Root is the mounted directory of the filesystem; Point where it is mounted.
	Root, Point string
	FSType      string
	Source      string
	// Super holds the superblock options (overlay's upperdir=...).
	Super map[string]string
}

// ParseMountinfo parses /proc/<pid>/mountinfo.
func ParseMountinfo(b []byte) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("mountinfo line %d: want \"id parent maj:min root point opts ... - type source super\"", ln)
		}
		ma, mi, ok := strings.Cut(f[2], ":")
		maj, err1 := strconv.ParseUint(ma, 10, 32)
		mnr, err2 := strconv.ParseUint(mi, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mountinfo line %d: device %q", ln, f[2])
		}
		m := Mount{Major: uint32(maj), Minor: uint32(mnr), Root: unescapeMount(f[3]), Point: unescapeMount(f[4]), FSType: f[sep+1], Source: f[sep+2]}
		if sep+3 < len(f) {
			m.Super = map[string]string{}
			for _, o := range strings.Split(f[sep+3], ",") {
				k, v, _ := strings.Cut(o, "=")
				m.Super[k] = unescapeMount(v)
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountOf returns the mount holding path (the longest mount point that is path or one of its parents;
// the last such mount wins, as the kernel's view does for mounts stacked on one point).
func MountOf(ms []Mount, path string) (Mount, bool) {
	best, bestLen, found := Mount{}, -1, false
	for _, m := range ms {
		p := m.Point
		if path == p || p == "/" || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			if len(p) >= bestLen {
				best, bestLen, found = m, len(p), true
			}
		}
	}
	return best, found
}
