package host

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MountPoints returns the mount points at or below dir (from /proc/self/mountinfo), deepest first.
func MountPoints(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := UnescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// UnescapeMountPath undoes mountinfo's octal escapes (\040 for space, ...).
func UnescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := (int(s[i+1]-'0') << 6) | (int(s[i+2]-'0') << 3) | int(s[i+3]-'0')
			b.WriteByte(byte(v))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// IsMountpoint reports whether dir is a mount point.
func IsMountpoint(dir string) bool {
	mps, err := MountPoints(dir)
	if err != nil {
		return false
	}
	for _, m := range mps {
		if m == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// UnmountAll unmounts everything at or below dir, deepest first.
func UnmountAll(ctx context.Context, dir string) error {
	mps, err := MountPoints(dir)
	if err != nil {
		return err
	}
	var firstErr error
	for _, m := range mps {
		if _, err := Run(ctx, Short, "umount", m); err != nil {
			// A busy mount (a process still holds it) is detached lazily rather than left behind.
			if _, err2 := Run(ctx, Short, "umount", "-l", m); err2 != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}
