package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// MountPoints returns the mount points at or below dir (from /proc/self/mountinfo), deepest first.
func MountPoints(dir string) ([]string, error) {
	ms, err := hostfs.Host().Mounts("self")
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range ms {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
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

// FreeSpace is the space an unprivileged writer may still use on the filesystem of path, or of its nearest
// existing parent, and that filesystem's size, as statfs(2) reports them (kubelet's nodefs.available reads
// the same two).
func FreeSpace(path string) (free, size uint64, err error) {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(path, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
		}
		parent := filepath.Dir(path)
		if !os.IsNotExist(err) || parent == path {
			return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
		}
		path = parent
	}
}
