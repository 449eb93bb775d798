package hostfs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// Mount is one line of /proc/<pid>/mountinfo (proc(5)), its paths unescaped.
type Mount struct {
	Major, Minor uint32
	// Root is the mounted directory of the filesystem; Point where it is mounted.
	Root, Point string
	FSType      string
	Source      string
	// Super holds the superblock options (overlay's upperdir=...).
	Super map[string]string
}

// Mounts reads proc/<pid>/mountinfo ("self" for this process's own) with procfs, whose fields keep the
// kernel's octal escapes (\040 for a space): they are undone here.
func (f FS) Mounts(pid string) (out []Mount, err error) {
	defer recoverParse("mountinfo", &err)
	fs, err := f.procfs()
	if err != nil {
		return nil, err
	}
	var p procfs.Proc
	if pid == "self" {
		p, err = fs.Self()
	} else if n, aerr := strconv.Atoi(pid); aerr != nil {
		return nil, fmt.Errorf("mountinfo: %q is not a pid", pid)
	} else {
		p, err = fs.Proc(n)
	}
	if err != nil {
		return nil, err
	}
	infos, err := p.MountInfo()
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	out = make([]Mount, 0, len(infos))
	for _, mi := range infos {
		m, err := mountOf(mi)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// mountOf converts one procfs entry.
func mountOf(mi *procfs.MountInfo) (Mount, error) {
	ma, mn, ok := strings.Cut(mi.MajorMinorVer, ":")
	maj, err1 := strconv.ParseUint(ma, 10, 32)
	mnr, err2 := strconv.ParseUint(mn, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return Mount{}, fmt.Errorf("mountinfo: device %q of mount %d", mi.MajorMinorVer, mi.MountID)
	}
	m := Mount{Major: uint32(maj), Minor: uint32(mnr), Root: UnescapeMount(mi.Root), Point: UnescapeMount(mi.MountPoint),
		FSType: mi.FSType, Source: mi.Source}
	if len(mi.SuperOptions) > 0 {
		m.Super = make(map[string]string, len(mi.SuperOptions))
		for k, v := range mi.SuperOptions {
			m.Super[k] = UnescapeMount(v)
		}
	}
	return m, nil
}

// UnescapeMount undoes mountinfo's octal escapes (\040 for a space, \011 a tab, \012 a newline, \134 a
// backslash); a backslash not followed by three octal digits stays as it is.
func UnescapeMount(s string) string {
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
