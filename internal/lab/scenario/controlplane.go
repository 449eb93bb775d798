package scenario

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// The etcd disk scenarios' limits. slow-etcd-disk: 30 write IOPS make each WAL fsync wait tens of ms (etcd's
// documentation wants p99 under 10 ms). etcd-disk-bandwidth: at 128 KiB/s a fsync of one 4 KiB page waits
// ~31 ms for its share of the bandwidth, longer behind a backend commit of tens of KiB.
const (
	SlowEtcdIOPS = 30
	EtcdWriteBPS = 128 << 10
)

// The control-plane-hog scenario's pod: HogThreadsPerCore spinning threads per core of the control-plane node
// (every core busy whatever the machine), requesting HogShare of the CPU the node has left (less HogHeadroom,
// for kubeslow's own agent) and with no limit. Requesting all of it (1.25 cores beside the static pods' 0.65,
// on a machine busy with other work) starved kube-apiserver so far that it answered none of its /metrics
// scrapes in 2 minutes, kubeslow's agent on the node (10m requested) with it; half of it left the API's p99
// within its 1 s SLO in 2 of 4 runs on an idle machine (nothing to name); three quarters put it at 2.8 s.
const (
	HogPod            = "kubeslow-lab-cp-hog"
	HogNamespace      = "default"
	HogThreadsPerCore = 2
	HogShare          = 0.75
)

// HogHeadroom is the CPU the hog leaves unrequested on the node: kubeslow's agent (10m) and others.
var HogHeadroom = resource.MustParse("100m")

func hogScenario() Scenario {
	return Scenario{Name: "control-plane-hog", Layouts: []string{lab.LayoutKubeadm}, Case: "E",
		Description: fmt.Sprintf("a pod of %d spinning threads per core on %s (tolerating its taint, requesting %.0f%% of the CPU its node has left, no limit) "+
			"beside kube-apiserver and etcd, which have no CPU limit, with small-control-plane's %d IPAM clients racing on 4 IPAMBlocks: "+
			"the control plane is starved by its neighbour; only --layout kubeadm has control-plane components on a node",
			HogThreadsPerCore, lab.ControlPlaneNodeName, HogShare*100, SmallControlPlaneStormClients),
		Configure: func(*lab.Config) {},
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			req, threads, err := startHog(ctx, d)
			if err != nil {
				return err
			}
			progress("pod %s/%s on %s: %d spinning threads, requesting %s CPU, no limit", HogNamespace, HogPod, lab.ControlPlaneNodeName, threads, req.String())
			return startSmallStorm(d, c)
		},
		Stop: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			return errors.Join(stopProcess("storm-conflict")(ctx, d, c, progress), stopHog(ctx, d))
		},
		Expect: []string{"KS-CP-SATURATED"}}
}

// startSmallStorm starts small-control-plane's conflict storm (the lab process storm-conflict,
// which conflict-storm's Stop stops).
func startSmallStorm(d lab.Dirs, c *lab.Config) error {
	return lab.StartLabProcess(d, "storm-conflict", []string{c.AgentBinary, "lab", "storm", "conflicts", "--kubeconfig", d.AdminKubeconfig(),
		"--clients", fmt.Sprint(SmallControlPlaneStormClients), "--blocks", "4", "--qps", "20", "--user-agent", ConflictStormUserAgent, "--duration", "30m"})
}

// stopProcess stops the named lab process (a scenario's load), if it runs.
func stopProcess(name string) func(context.Context, lab.Dirs, *lab.Config, lab.Progress) error {
	return func(_ context.Context, d lab.Dirs, _ *lab.Config, progress lab.Progress) error {
		pid, err := lab.StopLabProcess(d, name)
		if err == nil && pid != 0 {
			progress("%s (pid %d) stopped", name, pid)
		}
		return err
	}
}

// stopSmallControlPlane stops the storm, lifts the quota and, on --layout kubeadm, puts kube-apiserver and
// etcd back into their static pods' cgroups (the managed layout keeps them in the lab's counting cgroup).
func stopSmallControlPlane(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
	errs := []error{stopProcess("storm-conflict")(ctx, d, c, progress)}
	cpu, _ := lab.ControlPlaneCgroups()
	if err := os.WriteFile(filepath.Join(cpu, "cpu.cfs_quota_us"), []byte("-1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("lifting the control plane's CPU quota: %w", err))
	}
	if c.Kubeadm() {
		for _, name := range []string{lab.KubeAPIServer, lab.Etcd} {
			errs = append(errs, backToPodCgroup(d, name, "cpu", "cpuacct"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	progress("control plane's CPU quota lifted")
	return nil
}

// backToPodCgroup moves the static pod's process of component name back into its pod's cgroup in the given
// v1 hierarchies: the cgroup of the same path as its pids (or cgroup2) one, where the kubelet made all of them.
func backToPodCgroup(d lab.Dirs, name string, hierarchies ...string) error {
	pid, err := lab.ControlPlanePID(d, name)
	if err != nil {
		return err
	}
	cgs, err := procCgroups(pid)
	if err != nil {
		return err
	}
	home, ok := cgs["pids"]
	if !ok {
		home, ok = cgs[""]
	}
	if !ok {
		return fmt.Errorf("%s (pid %d): no pids or cgroup2 entry in /proc/%d/cgroup", name, pid, pid)
	}
	for _, h := range hierarchies {
		dir := filepath.Join("/sys/fs/cgroup", h, home)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving %s (pid %d) back to %s: %w", name, pid, dir, err)
		}
	}
	return nil
}

// procCgroups reads /proc/<pid>/cgroup: each v1 controller's cgroup path (by controller), and the v2 path
// under "".
func procCgroups(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	return parseCgroups(b)
}

// parseCgroups parses the lines "hierarchy-ID:controller-list:cgroup-path" of /proc/<pid>/cgroup; lines of
// another shape are skipped.
func parseCgroups(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	return out, sc.Err()
}

// onBlockDevice keeps etcd on a block device given (--etcd-storage device:...) or puts it on the lab's loop
// device: throttling needs a device, and a tmpfs has none.
func onBlockDevice(c *lab.Config) {
	if c.Etcd.Kind != "loop" && c.Etcd.Kind != "device" {
		c.Etcd = lab.EtcdStorage{Kind: "loop"}
	}
}

// etcdDevice is the "major:minor" of the device holding etcd's data directory.
func etcdDevice(d lab.Dirs) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(d.EtcdDir(), &st); err != nil {
		return "", err
	}
	if unix.Major(st.Dev) == 0 {
		return "", fmt.Errorf("etcd's data directory %s is on no block device (a tmpfs?): start the lab with --etcd-storage loop", d.EtcdDir())
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)), nil
}

// throttleEtcdIOPS is slow-etcd-disk's Start: etcd's writes to its device throttled to SlowEtcdIOPS in the
// lab's blkio cgroup of etcd, which the static pod's process joins on --layout kubeadm.
func throttleEtcdIOPS(_ context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
	cg := host.ProcessCgroup("blkio", lab.Etcd)
	if err := host.ThrottleWrites(cg, d.EtcdDir(), SlowEtcdIOPS); err != nil {
		return err
	}
	if c.Kubeadm() {
		pid, err := lab.ControlPlanePID(d, lab.Etcd)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving etcd (pid %d) into %s: %w", pid, cg, err)
		}
	}
	progress("etcd's writes throttled to %d IOPS on its device (blkio cgroup %s)", SlowEtcdIOPS, cg)
	return nil
}

// unthrottleEtcdIOPS lifts slow-etcd-disk's throttle and, on --layout kubeadm, puts etcd back into its pod's
// blkio cgroup.
func unthrottleEtcdIOPS(_ context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
	dev, err := etcdDevice(d)
	if err != nil {
		return err
	}
	cg := host.ProcessCgroup("blkio", lab.Etcd)
	if err := os.WriteFile(filepath.Join(cg, "blkio.throttle.write_iops_device"), []byte(dev+" 0"), 0o644); err != nil {
		return fmt.Errorf("lifting etcd's write throttle: %w", err)
	}
	if c.Kubeadm() {
		if err := backToPodCgroup(d, lab.Etcd, "blkio"); err != nil {
			return err
		}
	}
	progress("etcd's write throttle lifted")
	return nil
}

// etcdIOLimit is the file and line that limit etcd's write bandwidth on dev in the cgroup etcd runs in: v1
// blkio.throttle.write_bps_device, or v2 io.max where the io controller is on the unified hierarchy; bps 0
// lifts the limit.
func etcdIOLimit(d lab.Dirs, dev string, bps int64) (file, line string, err error) {
	pid, err := lab.ControlPlanePID(d, lab.Etcd)
	if err != nil {
		return "", "", err
	}
	cgs, err := procCgroups(pid)
	if err != nil {
		return "", "", err
	}
	if p, ok := cgs["blkio"]; ok {
		return filepath.Join("/sys/fs/cgroup/blkio", p, "blkio.throttle.write_bps_device"), fmt.Sprintf("%s %d", dev, bps), nil
	}
	p, ok := cgs[""]
	if !ok {
		return "", "", fmt.Errorf("etcd (pid %d): no blkio or cgroup2 entry in /proc/%d/cgroup", pid, pid)
	}
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if hasController(filepath.Join(root, p), "io") {
			v := "max"
			if bps > 0 {
				v = strconv.FormatInt(bps, 10)
			}
			return filepath.Join(root, p, "io.max"), fmt.Sprintf("%s wbps=%s", dev, v), nil
		}
	}
	return "", "", fmt.Errorf("etcd (pid %d): its cgroup %s has no io controller", pid, p)
}

// limitEtcdBandwidth is etcd-disk-bandwidth's Start: EtcdWriteBPS on etcd's device in etcd's own cgroup.
func limitEtcdBandwidth(_ context.Context, d lab.Dirs, _ *lab.Config, progress lab.Progress) error {
	return setEtcdBandwidth(d, EtcdWriteBPS, progress)
}

// unlimitEtcdBandwidth lifts it.
func unlimitEtcdBandwidth(_ context.Context, d lab.Dirs, _ *lab.Config, progress lab.Progress) error {
	return setEtcdBandwidth(d, 0, progress)
}

func setEtcdBandwidth(d lab.Dirs, bps int64, progress lab.Progress) error {
	dev, err := etcdDevice(d)
	if err != nil {
		return err
	}
	file, line, err := etcdIOLimit(d, dev, bps)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
		return fmt.Errorf("etcd's write bandwidth: %s: %w", file, err)
	}
	progress("%s: %s", file, line)
	return nil
}

// startHog creates the hog pod on the control-plane node, requesting HogShare of the CPU its node has left less
// HogHeadroom, HogThreadsPerCore threads per core of the node, and waits for it to run; it returns the request
// and the threads.
func startHog(ctx context.Context, d lab.Dirs) (resource.Quantity, int, error) {
	c, err := lab.AdminClient(d)
	if err != nil {
		return resource.Quantity{}, 0, err
	}
	node, err := c.CoreV1().Nodes().Get(ctx, lab.ControlPlaneNodeName, metav1.GetOptions{})
	if err != nil {
		return resource.Quantity{}, 0, err
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + lab.ControlPlaneNodeName})
	if err != nil {
		return resource.Quantity{}, 0, err
	}
	free := node.Status.Allocatable.Cpu().MilliValue() - HogHeadroom.MilliValue()
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			free -= ctr.Resources.Requests.Cpu().MilliValue()
		}
	}
	if free < 100 {
		return resource.Quantity{}, 0, fmt.Errorf("%s has %dm CPU left to request: too little for a hog", lab.ControlPlaneNodeName, free)
	}
	req := *resource.NewMilliQuantity(int64(float64(free)*HogShare), resource.DecimalSI)
	threads := HogThreadsPerCore * int(max(1, (node.Status.Capacity.Cpu().MilliValue()+999)/1000))
	one := int64(1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: HogPod, Namespace: HogNamespace, Labels: map[string]string{"app": HogPod}},
		Spec: corev1.PodSpec{NodeName: lab.ControlPlaneNodeName, HostNetwork: true, TerminationGracePeriodSeconds: &one,
			Tolerations: []corev1.Toleration{{Key: lab.ControlPlaneTaint.Key, Operator: corev1.TolerationOpExists, Effect: lab.ControlPlaneTaint.Effect}},
			Containers: []corev1.Container{{Name: "burn", Image: lab.AgentImage, ImagePullPolicy: corev1.PullNever,
				Args:      agentproto.Burn{Threads: threads}.Args(),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: req}}}}}}
	if _, err := c.CoreV1().Pods(HogNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return req, threads, err
	}
	var last *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(HogNamespace).Get(ctx, HogPod, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // a starved apiserver may not answer: try again
		}
		last = p
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("hog pod failed: %s %s", p.Status.Reason, p.Status.Message)
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		return req, threads, fmt.Errorf("hog pod %s/%s not Running (%+v): %w", HogNamespace, HogPod, last, err)
	}
	return req, threads, nil
}

// stopHog deletes the hog pod and waits until it is gone.
func stopHog(ctx context.Context, d lab.Dirs) error {
	c, err := lab.AdminClient(d)
	if err != nil {
		return err
	}
	// A grace of 1 s, not 0 (which removes the object at once, the container still running): the Pod is gone
	// once its kubelet has stopped the container.
	one := int64(1)
	if err := c.CoreV1().Pods(HogNamespace).Delete(ctx, HogPod, metav1.DeleteOptions{GracePeriodSeconds: &one}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods(HogNamespace).Get(ctx, HogPod, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
