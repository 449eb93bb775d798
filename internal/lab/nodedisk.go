package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// A real node's disk on a loop device, and a burst-credit model over it (the burst-credits scenario, case C):
// node 1's directory (containerd's root and state, the kubelet's root, pod logs) lives on an ext4 filesystem
// on a loop device the lab makes, and a lab process meters that device's I/O against a token bucket the way
// a gp2 volume spends burst credits, throttling the device to a baseline through the blkio cgroups when the
// bucket is empty.

// NodeDiskSettings put real node 1's directory on a loop device.
type NodeDiskSettings struct {
	Loop      bool  `json:"loop,omitempty"`
	SizeBytes int64 `json:"sizeBytes,omitempty"`
}

func nodeDiskImage(d Dirs) string { return filepath.Join(d.State, "node-disk.img") }

// mountNodeDisk mounts a fresh loop filesystem on node n's directory when the settings ask for it (node 1).
func mountNodeDisk(ctx context.Context, d Dirs, c *Config, n realNode) error {
	if !c.NodeDisk.Loop || n.index != 1 || host.IsMountpoint(n.dir(d)) {
		return nil
	}
	size := c.NodeDisk.SizeBytes
	if size <= 0 {
		size = 4 << 30
	}
	if err := os.MkdirAll(n.dir(d), 0o755); err != nil {
		return err
	}
	dev, err := host.LoopDisk(ctx, nodeDiskImage(d), size)
	if err != nil {
		return err
	}
	if _, err := host.Run(ctx, host.Short, "mount", dev, n.dir(d)); err != nil {
		_, _ = host.Run(ctx, host.Short, "losetup", "-d", dev)
		return err
	}
	return nil
}

// NodeDiskDevice is the loop device under real node 1's directory ("" when it has none).
func NodeDiskDevice(d Dirs) string {
	if devs := host.LoopDevicesOf(nodeDiskImage(d)); len(devs) > 0 {
		return devs[0]
	}
	return ""
}

// detachNodeDisk clears any throttle on the node disk's loop devices, detaches them and removes the image
// (after the node directory was unmounted).
func detachNodeDisk(ctx context.Context, d Dirs, progress Progress) []error {
	var errs []error
	for _, dev := range host.LoopDevicesOf(nodeDiskImage(d)) {
		if mm, err := devMajMin(dev); err == nil {
			_ = setDeviceThrottle(mm, 0)
		}
		if _, err := host.Run(ctx, host.Short, "losetup", "-d", dev); err != nil {
			errs = append(errs, err)
		} else {
			progress("detached %s", dev)
		}
	}
	if err := os.Remove(nodeDiskImage(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errs
}

func devMajMin(dev string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
}

// blkioRoot is the cgroup v1 blkio hierarchy.
const blkioRoot = "/sys/fs/cgroup/blkio"

// setDeviceThrottle limits reads and writes to the device majmin to iops each (0: no limit) in the blkio
// root and in every cgroup of the lab.
func setDeviceThrottle(majmin string, iops int) error {
	return (&throttler{majmin: majmin}).apply(iops)
}

// throttler writes a device's blkio throttle into the blkio root and every cgroup of the lab: cgroup v1
// throttles only the tasks of the cgroup that holds the rule (the lab's components and pods each sit in
// their own), and the root holds the kernel's flusher, journal and loop threads. It writes a cgroup again
// only when its limit changes (rewriting a rule restarts its accounting).
type throttler struct {
	majmin  string
	applied map[string]int
}

func (t *throttler) apply(iops int) error {
	if t.applied == nil {
		t.applied = map[string]int{}
	}
	var errs []error
	write := func(dir string) {
		if v, ok := t.applied[dir]; ok && v == iops {
			return
		}
		for _, f := range []string{"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"} {
			p := filepath.Join(dir, f)
			if err := os.WriteFile(p, []byte(t.majmin+" "+strconv.Itoa(iops)), 0o644); err != nil {
				if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENODEV) {
					errs = append(errs, fmt.Errorf("%s: %w", p, err))
				}
				return // a cgroup removed meanwhile
			}
		}
		t.applied[dir] = iops
	}
	write(blkioRoot)
	_ = filepath.WalkDir(host.LabCgroup(blkioRoot), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			write(p)
		}
		return nil
	})
	return errors.Join(errs...)
}

// CreditBucket is gp2's burst model: every I/O spends a credit, credits refill at the baseline rate up to the
// capacity; with credits the device may burst, without them it is held to the baseline. It resumes bursting
// once a tenth of the capacity has refilled (gp2 bursts whenever its balance is above zero; the margin keeps
// a lab throttle from flapping every tick).
type CreditBucket struct {
	Capacity     float64 `json:"capacity"`
	Credits      float64 `json:"credits"`
	BaselineIOPS float64 `json:"baselineIOPS"`
	BurstIOPS    float64 `json:"burstIOPS"`
	Exhausted    bool    `json:"exhausted"`
}

// Step spends ios and refills over dt; it reports whether the bucket changed between bursting and baseline.
func (b *CreditBucket) Step(ios uint64, dt time.Duration) (changed bool) {
	b.Credits = min(b.Capacity, b.Credits-float64(ios)+b.BaselineIOPS*dt.Seconds())
	switch {
	case !b.Exhausted && b.Credits <= 0:
		b.Exhausted = true
		return true
	case b.Exhausted && b.Credits >= b.Capacity/10:
		b.Exhausted = false
		return true
	}
	return false
}

// Limit is the IOPS the device is held to now.
func (b *CreditBucket) Limit() float64 {
	if b.Exhausted {
		return b.BaselineIOPS
	}
	return b.BurstIOPS
}

// CreditEvent is one line of the credit controller's event log (JSON lines).
type CreditEvent struct {
	T       time.Time `json:"t"`
	Event   string    `json:"event"` // "start", "exhausted", "refilled", "stop"
	IOs     uint64    `json:"ios"`
	Credits float64   `json:"credits"`
	Limit   float64   `json:"limitIOPS"`
}

// RunCredits meters dev's completed I/Os (/proc/diskstats) every tick against the bucket and sets the blkio
// throttle to the bucket's limit whenever it changes, and on every tick for cgroups the lab made meanwhile
// (the kubelet makes one per pod). Events go to w as JSON lines. The throttle is cleared when ctx ends.
func RunCredits(ctx context.Context, dev string, b CreditBucket, tick time.Duration, w io.Writer) error {
	mm, err := devMajMin(dev)
	if err != nil {
		return err
	}
	name := filepath.Base(dev)
	read := func() (uint64, error) {
		all, err := hostfs.Host().DiskStats()
		if err != nil {
			return 0, err
		}
		for _, s := range all {
			if s.Name == name {
				return s.ReadsDone + s.WritesDone, nil
			}
		}
		return 0, fmt.Errorf("%s is not in /proc/diskstats", name)
	}
	enc := json.NewEncoder(w)
	prev, err := read()
	if err != nil {
		return err
	}
	var total uint64
	emit := func(ev string) {
		_ = enc.Encode(CreditEvent{T: time.Now(), Event: ev, IOs: total, Credits: b.Credits, Limit: b.Limit()})
	}
	th := &throttler{majmin: mm}
	if err := th.apply(int(b.Limit())); err != nil {
		return err
	}
	emit("start")
	defer func() {
		_ = setDeviceThrottle(mm, 0)
		emit("stop")
	}()
	last := time.Now()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			cur, err := read()
			if err != nil {
				return err
			}
			ios := cur - prev
			if cur < prev {
				ios = 0
			}
			prev, total = cur, total+ios
			if b.Step(ios, now.Sub(last)) {
				if b.Exhausted {
					emit("exhausted")
				} else {
					emit("refilled")
				}
			}
			last = now
			// New cgroups (pods) get the current limit, and all of them a new one.
			if err := th.apply(int(b.Limit())); err != nil {
				return err
			}
		}
	}
}

// CreditProcess is the lab process that runs the credit controller; its log holds the events.
const CreditProcess = "burst-credits"

// StepThrottleProcess is the lab process of the disk-throttle scenario; its log holds its events.
const StepThrottleProcess = "disk-throttle"

// RunStepThrottle is a second way for a node's disk to slow down, unlike the credit bucket independent of
// the I/O done: after the delay it holds dev to iops reads and iops writes a second (blk-throttle, the limit
// cgroup v2's io.max sets, here through the v1 blkio cgroups as the credit controller does) until ctx ends,
// as a provider's or an operator's throttle, or a volume moved to a slower class, would at a moment of its
// own. Every tick it applies the limit to the cgroups made meanwhile (the kubelet makes one per pod). Events
// ("start", "throttled", "stop") go to w as JSON lines; the limit is lifted when ctx ends.
func RunStepThrottle(ctx context.Context, dev string, after time.Duration, iops int, tick time.Duration, w io.Writer) error {
	if iops < 1 {
		return fmt.Errorf("step throttle: %d IOPS: want at least 1", iops)
	}
	mm, err := devMajMin(dev)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	limit := 0
	emit := func(ev string) { _ = enc.Encode(CreditEvent{T: time.Now(), Event: ev, Limit: float64(limit)}) }
	emit("start")
	defer func() {
		_ = setDeviceThrottle(mm, 0)
		limit = 0
		emit("stop")
	}()
	timer := time.NewTimer(after)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-timer.C:
	}
	th := &throttler{majmin: mm}
	limit = iops
	if err := th.apply(iops); err != nil {
		return err
	}
	emit("throttled")
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := th.apply(iops); err != nil {
				return err
			}
		}
	}
}
