// Package labtest helps integration tests that run the real lab: it gates them, isolates their state and
// checks that teardown leaves nothing behind.
package labtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// EnvVar enables the integration tests (they need root and build the lab, minutes when cold).
const EnvVar = "KUBESLOW_INTEGRATION"

// LockPath is the machine-wide lock that integration tests hold while their lab is up (there is one lab per
// machine). A person running `kubeslow lab up` by hand beside tests takes it with flock(1):
// `flock /run/kubeslow-lab.lock sh -c 'kubeslow lab up ...; ...; kubeslow lab down'`.
const LockPath = "/run/kubeslow-lab.lock"

// Dirs skips the test unless integration tests are enabled, waits for the machine's lab lock (held until the
// test ends, after its lab is down), fails the test if a lab is already up (there is one lab per machine: its
// network namespace has a fixed name), and returns directories with the shared build cache and a fresh state
// directory.
func Dirs(t *testing.T) lab.Dirs {
	t.Helper()
	gate(t)
	// A lab shared by the package's earlier tests goes down first: this test starts a lab of its own.
	if err := closeShared(); err != nil {
		t.Fatal(err)
	}
	lockLab(t)
	d, err := freshDirs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Dir(d.State)) })
	return d
}

// gate skips the test unless integration tests are enabled, and fails it when they are but it is not root.
func gate(t *testing.T) {
	t.Helper()
	if os.Getenv(EnvVar) == "" {
		t.Skipf("integration test: set %s=1 (needs root; builds the lab on first use)", EnvVar)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is set but the lab needs root", EnvVar)
	}
}

// freshDirs checks that no lab is up on the machine (there is one lab per machine: its network namespace has a
// fixed name) and returns the directories of a new one: the shared build cache and a state directory of its
// own under a new temporary directory (the caller removes that parent once the lab is down).
func freshDirs() (lab.Dirs, error) {
	if _, err := os.Stat("/run/netns/" + lab.NetNS); err == nil {
		return lab.Dirs{}, fmt.Errorf("a lab is already up on this machine (network namespace %s): run `kubeslow lab down` first", lab.NetNS)
	}
	d, err := lab.DefaultDirs()
	if err != nil {
		return lab.Dirs{}, err
	}
	state, err := os.MkdirTemp("", "kubeslow-lab-test-")
	if err != nil {
		return lab.Dirs{}, err
	}
	d.State = filepath.Join(state, "lab")
	return d, nil
}

// lockLab takes the machine's lab lock for the rest of the test (released by the first cleanup registered,
// which runs last). The lock goes with the process if the test dies.
func lockLab(t *testing.T) {
	t.Helper()
	f, err := takeLock(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
}

// Process is a lab process as recorded at start.
type Process struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTick uint64 `json:"startTick"`
}

// Processes reads the lab's process records.
func Processes(t *testing.T, d lab.Dirs) []Process {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(d.ProcDir(), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Process
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p Process
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// AssertGone checks that no recorded process runs, nothing is mounted under the state directory, the network
// namespace, host link and cgroups are gone, and the state directory is removed.
func AssertGone(t *testing.T, d lab.Dirs, procs []Process) {
	t.Helper()
	for _, l := range leftovers(d, procs) {
		t.Error(l)
	}
}

// leftovers lists what a lab that is down left behind: recorded processes still running, mounts under the
// state directory, the network namespaces, host link, cgroups, state directory, container log links and
// the node disk's loop device.
func leftovers(d lab.Dirs, procs []Process) []string {
	var out []string
	for _, p := range procs {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID)); err == nil {
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) > 19 && f[19] == fmt.Sprint(p.StartTick) {
				out = append(out, fmt.Sprintf("process %s (pid %d) still exists (state %s)", p.Name, p.PID, f[0]))
			}
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil {
		out = append(out, "reading mountinfo: "+err.Error())
	} else if strings.Contains(string(mi), d.State) {
		out = append(out, fmt.Sprintf("mounts left under %s", d.State))
	}
	paths := []string{"/run/netns/" + lab.NetNS, "/sys/class/net/" + lab.HostVeth, d.State}
	for i := 1; i <= lab.MaxRealNodes; i++ {
		paths = append(paths, "/run/netns/"+lab.RealNodeNetNS(i))
	}
	cgs, _ := filepath.Glob("/sys/fs/cgroup/*/kubeslow-lab")
	paths = append(paths, cgs...)
	// Host paths the kubelet, containerd and CNI write whatever their configuration: nothing of ours may stay.
	if links, _ := filepath.Glob("/var/log/containers/*"); len(links) > 0 {
		for _, l := range links {
			if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, d.State) {
				out = append(out, fmt.Sprintf("container log link %s -> %s left behind", l, target))
			}
		}
	}
	for _, path := range paths {
		if _, err := os.Stat(path); err == nil {
			out = append(out, fmt.Sprintf("%s still exists after lab down", path))
		}
	}
	if dev := lab.NodeDiskDevice(d); dev != "" {
		out = append(out, fmt.Sprintf("loop device %s of the node disk left attached", dev))
	}
	return out
}

// Up starts a lab with start (lab.Up or scenario.Up with the test's configuration) and returns its admin
// REST config and the function that takes it down and checks that nothing it made is left (AssertGone):
// defer it. A failed start takes the half-made lab down and fails the test.
func Up(t *testing.T, d lab.Dirs, start func() error) (*rest.Config, func()) {
	t.Helper()
	if err := start(); err != nil {
		_ = lab.Down(context.Background(), d, t.Logf)
		t.Fatalf("lab up: %v", err)
	}
	procs := Processes(t, d)
	down := func() {
		if err := lab.Down(context.Background(), d, t.Logf); err != nil {
			t.Errorf("lab down: %v", err)
		}
		AssertGone(t, d, procs)
	}
	rc, err := lab.AdminRESTConfig(d)
	if err != nil {
		down()
		t.Fatal(err)
	}
	return rc, down
}

// WaitPodRunning watches a pod until it is Running (and fails the test if it fails or the context ends).
func WaitPodRunning(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return c.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return c.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
	var pod *corev1.Pod
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod %s failed: %s", name, p.Status.Message)
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s/%s to run: %v", ns, name, err)
	}
	return pod
}

// Eventually retries check (a network path that needs a moment to program: iptables rules, DNS records)
// with a short back-off until it succeeds or 60 s pass.
func Eventually(ctx context.Context, t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last error: %v)", what, err, last)
	}
	t.Logf("%s: ok", what)
}
