package hostfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Conntrack's per-CPU statistics (/proc/net/stat/nf_conntrack) that tell a data path's trouble: a new flow
// that lost the race to insert its entry (insert_failed: case kubernetes#56903, glibc's A and AAAA lookups from
// one socket through a UDP DNAT, one dropped, the lookup waiting out its 5 s retry), and flows dropped
// (drop, early_drop: the table full). The kernel's columns changed across versions ("searched" became
// "clashres"/"clash_resolve", "delete_list" "chainlength"), so the file is read by its header's names, not by
// position (prometheus/procfs reads it by position and names the columns of old kernels, so it is parsed here).
const (
	ConntrackInsertFailed = "insert_failed"
	ConntrackDrop         = "drop"
	ConntrackEarlyDrop    = "early_drop"
)

// ParseConntrackStat reads /proc/net/stat/nf_conntrack: a header of column names, then one line of
// hexadecimal counters per CPU. It returns each column summed over the CPUs, by its header name ("entries" is
// a gauge, the same on every line: it is taken once, not summed). A line whose count of fields differs from the
// header's, or a field that is not hexadecimal, is an error naming the line.
func ParseConntrackStat(b []byte) (map[string]uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return nil, fmt.Errorf("nf_conntrack stats: empty")
	}
	header := strings.Fields(sc.Text())
	if len(header) == 0 {
		return nil, fmt.Errorf("nf_conntrack stats: no header")
	}
	out := make(map[string]uint64, len(header))
	line := 1
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != len(header) {
			return nil, fmt.Errorf("nf_conntrack stats line %d: %d fields, the header has %d", line, len(f), len(header))
		}
		for i, s := range f {
			v, err := strconv.ParseUint(s, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("nf_conntrack stats line %d, %s: %q is not a hexadecimal count", line, header[i], s)
			}
			if header[i] == "entries" {
				out[header[i]] = v
				continue
			}
			out[header[i]] += v
		}
	}
	return out, sc.Err()
}

// ConntrackStat reads proc/net/stat/nf_conntrack (ParseConntrackStat).
func (f FS) ConntrackStat() (map[string]uint64, error) {
	b, err := os.ReadFile(filepath.Join(f.Proc, "net/stat/nf_conntrack"))
	if err != nil {
		return nil, err
	}
	return ParseConntrackStat(b)
}
