package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The "loop" etcd storage is a file-backed loop device with an ext4 filesystem, made by the lab, so that a
// scenario can slow etcd's disk for real: the blkio cgroup throttles the etcd process's writes to that
// device (fdatasync then waits for them), which is what a slow network disk looks like to etcd.

func etcdDiskImage(d Dirs) string { return filepath.Join(d.State, "etcd-disk.img") }

// setupLoopDisk creates the image, attaches a loop device and makes a filesystem; it returns the device.
func setupLoopDisk(ctx context.Context, d Dirs, size int64) (string, error) {
	img := etcdDiskImage(d)
	f, err := os.OpenFile(img, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return "", err
	}
	f.Close()
	dev, err := run(ctx, short, "losetup", "--find", "--show", img)
	if err != nil {
		return "", err
	}
	if _, err := run(ctx, short, "mkfs.ext4", "-q", "-F", dev); err != nil {
		_, _ = run(ctx, short, "losetup", "-d", dev)
		return "", err
	}
	return dev, nil
}

// loopDevicesOf lists loop devices backed by the lab's disk image (from sysfs), so teardown can detach them
// even if the state record was lost.
func loopDevicesOf(img string) []string {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err == nil && string(trimNL(b)) == img {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(m))))
		}
	}
	return out
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// throttleEtcdWrites limits the etcd process's write IOPS on the device holding dir (blkio cgroup v1).
func throttleEtcdWrites(dir string, iops int) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	majmin := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	cg := ProcessCgroup("blkio", Etcd)
	if err := os.MkdirAll(cg, 0o755); err != nil {
		return err
	}
	path := filepath.Join(cg, "blkio.throttle.write_iops_device")
	if err := os.WriteFile(path, []byte(majmin+" "+strconv.Itoa(iops)), 0o644); err != nil {
		return fmt.Errorf("throttling etcd's writes on %s: %w", majmin, err)
	}
	return nil
}
