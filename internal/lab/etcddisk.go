package lab

import (
	"path/filepath"
)

// The "loop" etcd storage is a file-backed loop device with an ext4 filesystem, made by the lab, so that a
// scenario can slow etcd's disk for real: the blkio cgroup throttles the etcd process's writes to that
// device (fdatasync then waits for them), which is what a slow network disk looks like to etcd.

func etcdDiskImage(d Dirs) string { return filepath.Join(d.State, "etcd-disk.img") }
