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

// controlPlaneCPUCgroup is the cgroup (v1 cpu hierarchy, below the lab's own, so `lab down` removes it) in
// which a scenario confines kube-apiserver and etcd to a CPU quota.
func controlPlaneCPUCgroup() string {
	return filepath.Join(host.LabCgroup("/sys/fs/cgroup/cpu"), "control-plane")
}

// LimitControlPlaneCPU confines kube-apiserver and etcd together to cores of CPU (a CFS quota on one cgroup
// both join): case E's starved master, on a host with more cores.
func LimitControlPlaneCPU(d Dirs, cores float64) error {
	if cores <= 0 {
		return fmt.Errorf("control-plane CPU quota %g: want > 0 cores", cores)
	}
	cg := controlPlaneCPUCgroup()
	if _, err := os.Stat(filepath.Dir(filepath.Dir(cg))); err != nil {
		return fmt.Errorf("no cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu: %w", err)
	}
	if err := os.MkdirAll(cg, 0o755); err != nil {
		return err
	}
	for f, v := range map[string]int{"cpu.cfs_period_us": cpuPeriodMicros, "cpu.cfs_quota_us": int(cores * cpuPeriodMicros)} {
		if err := os.WriteFile(filepath.Join(cg, f), []byte(strconv.Itoa(v)), 0o644); err != nil {
			return fmt.Errorf("cgroup %s: %w", f, err)
		}
	}
	for _, name := range []string{KubeAPIServer, Etcd} {
		p, err := d.procs().Read(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(p.PID)), 0o644); err != nil {
			return fmt.Errorf("moving %s (pid %d) into %s: %w", name, p.PID, cg, err)
		}
	}
	return nil
}

// ControlPlaneCores is the CPU quota kube-apiserver and etcd run under, in cores; 0 when none is set.
func ControlPlaneCores() float64 {
	cg := controlPlaneCPUCgroup()
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
