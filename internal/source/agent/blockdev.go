package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// BlockDev is a block device as sysfs describes it.
type BlockDev struct {
	// Role says which directory lives on it ("kubelet": the kubelet's root dir; "runtime": the container
	// runtime's); Dir is that directory as the agent saw it.
	Role string `json:"role"`
	Dir  string `json:"dir"`
	// Dev is major:minor; Name the kernel's name of the disk (the partition's parent for a partition).
	Dev  string `json:"dev"`
	Name string `json:"name,omitempty"`
	// Rotational is queue/rotational (1: a spinning disk, or a virtual disk that does not say otherwise).
	Rotational bool   `json:"rotational"`
	Scheduler  string `json:"scheduler,omitempty"`
	Model      string `json:"model,omitempty"`
	// Driver is the device's driver (virtio_blk, nvme, sd...): virtio disks report rotational=1 unless the
	// hypervisor says otherwise, so the flag alone does not tell a spinning disk there.
	Driver    string `json:"driver,omitempty"`
	SizeBytes int64  `json:"size_bytes"`
	// Virtual is set when the directory is on no block device (tmpfs, an overlay without a resolvable
	// upper layer): there is nothing to describe.
	Virtual bool   `json:"virtual,omitempty"`
	FSType  string `json:"fstype,omitempty"`
}

// ReadBlockDev describes device major:minor from sysfs (sys is the sysfs root).
func ReadBlockDev(sys string, major, minor uint32) (BlockDev, error) {
	d := BlockDev{Dev: fmt.Sprintf("%d:%d", major, minor)}
	link := filepath.Join(sys, "dev/block", d.Dev)
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		return d, fmt.Errorf("block device %s: %w", d.Dev, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir) // a partition: the queue and the model are its disk's
	}
	d.Name = filepath.Base(dir)
	// Read by hand, not with procfs's blockdevice.SysBlockDeviceQueueStats: that one reads sys/block/<name>/queue,
	// every one of its ~30 attributes, and fails on the first it cannot read (they come and go with kernel
	// versions; the fixture trees under testdata hold the two read here), where only rotational and scheduler are
	// needed, of the disk that the device's sys/dev/block link resolves to; the model, the driver link and the
	// size it does not read at all.
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(dir, p))
		return strings.TrimSpace(string(b))
	}
	rot := read("queue/rotational")
	if rot == "" {
		return d, fmt.Errorf("block device %s (%s): no queue/rotational", d.Dev, d.Name)
	}
	d.Rotational = rot == "1"
	d.Scheduler = ActiveScheduler(read("queue/scheduler"))
	d.Model = read("device/model")
	if l, err := os.Readlink(filepath.Join(dir, "device/driver")); err == nil {
		d.Driver = filepath.Base(l)
	}
	if sectors, err := strconv.ParseInt(read("size"), 10, 64); err == nil {
		d.SizeBytes = sectors * 512 // sysfs sizes are in 512-byte sectors whatever the block size
	}
	return d, nil
}

// ActiveScheduler returns the bracketed entry of queue/scheduler ("mq-deadline [none]" -> "none"), or the
// whole text when nothing is bracketed.
func ActiveScheduler(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return s
}

// DirDevice finds the device holding dir, as the agent sees it. A directory on a real device (a hostPath
// or an emptyDir, which lives under the kubelet's root dir) is stat'ed; an overlay (the container's own
// root: its writable layer lives under the runtime's directory) is followed to its upper directory, which
// is then looked up in the host's mount table (hostMounts, from the host's /proc/1/mountinfo).
func DirDevice(dir string, selfMounts, hostMounts []hostfs.Mount) (major, minor uint32, fstype string, err error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, 0, "", err
	}
	major, minor = unix.Major(st.Dev), unix.Minor(st.Dev)
	m, ok := hostfs.MountOf(selfMounts, dir)
	if !ok {
		return major, minor, "", nil
	}
	if m.FSType != "overlay" {
		return major, minor, m.FSType, nil
	}
	upper := m.Super["upperdir"]
	if upper == "" {
		return 0, 0, "overlay", fmt.Errorf("%s: overlay without upperdir", dir)
	}
	hm, ok := hostfs.MountOf(hostMounts, upper)
	if !ok {
		return 0, 0, "overlay", fmt.Errorf("%s: overlay upper %s is in no host mount", dir, upper)
	}
	return hm.Major, hm.Minor, hm.FSType, nil
}
