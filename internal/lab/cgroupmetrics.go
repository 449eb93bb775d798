package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
)

// The lab's control plane (kube-apiserver and etcd) shares one cgroup that no scrape target exports: Debian's
// node_exporter has no cgroup collector and the lab runs no cAdvisor. `lab up --prometheus` runs this small
// exporter beside Prometheus: on every scrape it reads the cgroup's kernel counters and serves them under the
// names and labels cAdvisor gives a raw cgroup (its `id`, the cgroup's path in the hierarchy), so a past window's
// controlplane.usage reads the control plane's CPU quota and throttling from Prometheus as it would a cAdvisor's.
const (
	CgroupMetricsComponent = "control-plane-cgroup"
	CgroupMetricsPort      = 9101
)

// CgroupMetricsAddr is where the exporter listens, inside the lab's namespace.
func CgroupMetricsAddr() string { return fmt.Sprintf("%s:%d", ControlPlaneIP, CgroupMetricsPort) }

// ControlPlaneCgroupID is the control plane's cgroup as cAdvisor names it (its path below the hierarchy's root).
func ControlPlaneCgroupID() string {
	cpu, _ := ControlPlaneCgroups()
	return strings.TrimPrefix(cpu, "/sys/fs/cgroup/cpu")
}

// WriteCgroupMetrics writes the cgroup's counters in the text format: CPU time (cpuacct.usage), CFS periods,
// throttled periods and time (cpu.stat), and, under a quota, the quota and period (cpu.cfs_quota_us,
// cpu.cfs_period_us), as cAdvisor's container_* series labelled id. A file that cannot be read leaves its
// series out.
func WriteCgroupMetrics(w io.Writer, id, cpuDir, acctDir string) error {
	lbl := fmt.Sprintf("{id=%q}", id)
	var b strings.Builder
	emit := func(name, typ string, v float64) {
		fmt.Fprintf(&b, "# TYPE %s %s\n%s%s %s\n", name, typ, name, lbl, strconv.FormatFloat(v, 'g', -1, 64))
	}
	if raw, err := os.ReadFile(filepath.Join(acctDir, "cpuacct.usage")); err == nil {
		if ns, err := hostfs.ParseCPUAcctUsage(raw); err == nil {
			emit("container_cpu_usage_seconds_total", "counter", float64(ns)/1e9)
		}
	}
	if raw, err := os.ReadFile(filepath.Join(cpuDir, "cpu.stat")); err == nil {
		if s, err := hostfs.ParseCPUStat(raw); err == nil {
			emit("container_cpu_cfs_periods_total", "counter", float64(s.Periods))
			emit("container_cpu_cfs_throttled_periods_total", "counter", float64(s.Throttled))
			emit("container_cpu_cfs_throttled_seconds_total", "counter", s.ThrottledSeconds)
		}
	}
	quota, err1 := readInt(filepath.Join(cpuDir, "cpu.cfs_quota_us"))
	period, err2 := readInt(filepath.Join(cpuDir, "cpu.cfs_period_us"))
	if err1 == nil && err2 == nil && quota > 0 && period > 0 { // -1: no quota, which cAdvisor leaves out too
		emit("container_spec_cpu_quota", "gauge", float64(quota))
		emit("container_spec_cpu_period", "gauge", float64(period))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
}

// ServeCgroupMetrics serves WriteCgroupMetrics of the control plane's cgroup on addr's /metrics until ctx ends.
func ServeCgroupMetrics(ctx context.Context, addr string) error {
	cpu, acct := ControlPlaneCgroups()
	id := ControlPlaneCgroupID()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_ = WriteCgroupMetrics(w, id, cpu, acct)
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
