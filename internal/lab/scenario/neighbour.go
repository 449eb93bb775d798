package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// The control-plane-neighbour scenario: a host service of the control-plane node, not a pod — a process in a
// cgroup of its own beside the kubelet's kubepods, as a backup agent, a log shipper or a scanner run by the
// node's init system is — given NeighbourWeightFactor times kubepods' CPU weight and spinning HogThreadsPerCore
// threads per core, with small-control-plane's conflict storm. When both want the CPU, everything in kubepods
// (kube-apiserver, etcd, the controllers, kubeslow's own agent) shares a quarter of it. No Kubernetes object
// shows the neighbour: only the components' wait for a CPU does.
const (
	NeighbourProcess      = "cp-neighbour"
	NeighbourCgroup       = "system-neighbour"
	NeighbourWeightFactor = 9
)

func neighbourScenario() Scenario {
	return Scenario{Name: "control-plane-neighbour", Layouts: []string{lab.LayoutKubeadm}, Case: "E",
		Description: fmt.Sprintf("a host process on %s outside Kubernetes (cgroup %s beside kubepods, %d times kubepods' CPU weight, %d spinning "+
			"threads per core) with small-control-plane's %d IPAM clients racing on 4 IPAMBlocks: the control plane's pods get a quarter of "+
			"the CPU and no object in the cluster shows why; only --layout kubeadm has control-plane components on a node",
			lab.ControlPlaneNodeName, NeighbourCgroup, NeighbourWeightFactor, HogThreadsPerCore, SmallControlPlaneStormClients),
		Configure: func(*lab.Config) {},
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			n, err := startNeighbour(d, c)
			if err != nil {
				return err
			}
			progress("%s: %s", NeighbourProcess, n)
			return startSmallStorm(d, c)
		},
		Stop: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			errs := []error{stopProcess("storm-conflict")(ctx, d, c, progress), stopProcess(NeighbourProcess)(ctx, d, c, progress)}
			if h, err := cpuHierarchy(); err == nil {
				dir := filepath.Join(h.root, lab.ControlPlaneNodeCgroup(), NeighbourCgroup)
				if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("removing the neighbour's cgroup: %w", err))
				}
			}
			return errors.Join(errs...)
		},
		Expect: []string{"KS-CP-SATURATED"}}
}

// cpuWeights is the hierarchy where the CPU controller weighs cgroups against each other: cgroup v1's cpu
// (cpu.shares, default 1024) or the unified one (cpu.weight, default 100).
type cpuWeights struct {
	root, file string
	max        int
}

func cpuHierarchy() (cpuWeights, error) {
	for _, r := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if hasController(r, "cpu") {
			return cpuWeights{root: r, file: "cpu.weight", max: 10000}, nil
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.shares"); err == nil {
		return cpuWeights{root: "/sys/fs/cgroup/cpu", file: "cpu.shares", max: 262144}, nil
	}
	return cpuWeights{}, errors.New("no CPU controller: neither cgroup v2's cpu nor v1's cpu hierarchy is mounted")
}

// hasController reports whether the cgroup v2 directory dir offers controller ctl (its cgroup.controllers).
func hasController(dir, ctl string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(b)), ctl)
}

// startNeighbour makes the neighbour's cgroup beside the control-plane node's kubepods, weighted
// NeighbourWeightFactor times kubepods, starts the spinning process as a lab process and moves it in. It says
// what it made.
func startNeighbour(d lab.Dirs, c *lab.Config) (string, error) {
	h, err := cpuHierarchy()
	if err != nil {
		return "", err
	}
	node := filepath.Join(h.root, lab.ControlPlaneNodeCgroup())
	b, err := os.ReadFile(filepath.Join(node, "kubepods", h.file))
	if err != nil {
		return "", fmt.Errorf("the control-plane node's kubepods cgroup: %w", err)
	}
	pods, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pods <= 0 {
		return "", fmt.Errorf("kubepods' %s: %q", h.file, b)
	}
	weight := min(h.max, NeighbourWeightFactor*pods)
	dir := filepath.Join(node, NeighbourCgroup)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, h.file), []byte(strconv.Itoa(weight)), 0o644); err != nil {
		return "", fmt.Errorf("weighting the neighbour's cgroup: %w", err)
	}
	threads := HogThreadsPerCore * runtime.NumCPU()
	if err := lab.StartLabProcess(d, NeighbourProcess, append([]string{c.AgentBinary}, agentproto.Burn{Threads: threads}.Args()...)); err != nil {
		return "", err
	}
	rec, err := host.Records{Dir: d.ProcDir(), Logs: d.LogDir()}.Read(NeighbourProcess)
	if err != nil {
		return "", err
	}
	pid := rec.PID
	// The whole process (cgroup.procs moves every thread); its other hierarchies stay the lab's, so that
	// `lab down` finds it like any lab process.
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return "", errors.Join(fmt.Errorf("moving the neighbour (pid %d) into %s: %w", pid, dir, err), stopProcess(NeighbourProcess)(context.Background(), d, c, func(string, ...any) {}))
	}
	return fmt.Sprintf("pid %d, %d spinning threads, in %s (%s %d, kubepods' %d)", pid, threads, dir, h.file, weight, pods), nil
}
