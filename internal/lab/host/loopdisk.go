package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LoopDisk creates (or grows) the image file img to size, attaches a loop device to it and makes an ext4
// filesystem on it; it returns the device.
func LoopDisk(ctx context.Context, img string, size int64) (string, error) {
	f, err := os.OpenFile(img, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return "", err
	}
	f.Close()
	dev, err := Run(ctx, Short, "losetup", "--find", "--show", img)
	if err != nil {
		return "", err
	}
	if _, err := Run(ctx, Short, "mkfs.ext4", "-q", "-F", dev); err != nil {
		_, _ = Run(ctx, Short, "losetup", "-d", dev)
		return "", err
	}
	return dev, nil
}

// LoopDevicesOf lists the loop devices backed by img (from sysfs), so that teardown can detach them even if
// the record of them was lost.
func LoopDevicesOf(img string) []string {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err == nil && strings.TrimRight(string(b), "\n ") == img {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(m))))
		}
	}
	return out
}

// ThrottleWrites limits the write IOPS of the processes in blkio cgroup cg on the device that holds dir
// (cgroup v1 blkio.throttle.write_iops_device).
func ThrottleWrites(cg, dir string, iops int) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	majmin := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if err := os.MkdirAll(cg, 0o755); err != nil {
		return err
	}
	path := filepath.Join(cg, "blkio.throttle.write_iops_device")
	if err := os.WriteFile(path, []byte(majmin+" "+strconv.Itoa(iops)), 0o644); err != nil {
		return fmt.Errorf("throttling writes on %s: %w", majmin, err)
	}
	return nil
}
