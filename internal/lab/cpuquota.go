package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// cpuPeriodMicros is the CFS period of the control plane's CPU quota.
const cpuPeriodMicros = 100000

// controlPlaneCgroupName is the cgroup kube-apiserver and etcd share in the cpu and cpuacct hierarchies.
const controlPlaneCgroupName = "control-plane"

// ControlPlaneCgroups are the cgroups (v1 cpu and cpuacct hierarchies, below the lab's own, so `lab down`
// removes them) kube-apiserver and etcd share: the lab's own CPU counters of the control plane (cpuacct.usage,
// and cpu.stat's periods and throttling), and the CFS quota a scenario may set.
func ControlPlaneCgroups() (cpu, cpuacct string) {
	return filepath.Join(host.LabCgroup("/sys/fs/cgroup/cpu"), controlPlaneCgroupName),
		filepath.Join(host.LabCgroup("/sys/fs/cgroup/cpuacct"), controlPlaneCgroupName)
}

// JoinControlPlaneCgroups moves kube-apiserver and etcd into their shared cpu and cpuacct cgroups (no quota:
// the cgroup only counts). In the kubeadm layout they are the static pods' processes (ControlPlanePID), taken
// out of their kubepods cgroups in those two hierarchies only. A hierarchy that is not mounted (cgroup v2 only) is left out.
func JoinControlPlaneCgroups(d Dirs) ([]string, error) {
	cpu, acct := ControlPlaneCgroups()
	var joined []string
	for _, cg := range []string{cpu, acct} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(cg)), "cgroup.procs")); err != nil {
			continue
		}
		if err := os.MkdirAll(cg, 0o755); err != nil {
			return nil, err
		}
		for _, name := range []string{KubeAPIServer, Etcd} {
			pid, err := ControlPlanePID(d, name)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				return nil, fmt.Errorf("moving %s (pid %d) into %s: %w", name, pid, cg, err)
			}
		}
		joined = append(joined, cg)
	}
	return joined, nil
}

// LimitControlPlaneCPU confines kube-apiserver and etcd together to cores of CPU (a CFS quota on the cgroup
// both share): case E's starved master, on a host with more cores.
func LimitControlPlaneCPU(d Dirs, cores float64) error {
	if cores <= 0 {
		return fmt.Errorf("control-plane CPU quota %g: want > 0 cores", cores)
	}
	cg, _ := ControlPlaneCgroups()
	if _, err := os.Stat(filepath.Dir(filepath.Dir(cg))); err != nil {
		return fmt.Errorf("no cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu: %w", err)
	}
	if _, err := JoinControlPlaneCgroups(d); err != nil {
		return err
	}
	for f, v := range map[string]int{"cpu.cfs_period_us": cpuPeriodMicros, "cpu.cfs_quota_us": int(cores * cpuPeriodMicros)} {
		if err := os.WriteFile(filepath.Join(cg, f), []byte(strconv.Itoa(v)), 0o644); err != nil {
			return fmt.Errorf("cgroup %s: %w", f, err)
		}
	}
	return nil
}

// ControlPlaneCores is the CPU quota kube-apiserver and etcd run under, in cores; 0 when none is set.
func ControlPlaneCores() float64 {
	cg, _ := ControlPlaneCgroups()
	q, err1 := os.ReadFile(filepath.Join(cg, "cpu.cfs_quota_us"))
	p, err2 := os.ReadFile(filepath.Join(cg, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0
	}
	quota, err1 := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	period, err2 := strconv.ParseFloat(strings.TrimSpace(string(p)), 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0
	}
	return quota / period
}
