package cpusage

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// The lab's own cgroup counters of the control plane (kube-apiserver and etcd share one cgroup), merged into
// each snapshot as counter families with this prefix, so that the window's deltas and the steps treat them
// as any other counter.
const (
	cgroupPrefix           = "cgroup:"
	famCgroupUsage         = cgroupPrefix + "usage_seconds_total"     // cpuacct.usage
	famCgroupPeriods       = cgroupPrefix + "periods_total"           // cpu.stat nr_periods
	famCgroupThrottled     = cgroupPrefix + "throttled_periods_total" // cpu.stat nr_throttled
	famCgroupThrottledSec  = cgroupPrefix + "throttled_seconds_total" // cpu.stat throttled_time
	famCgroupPeriodSeconds = cgroupPrefix + "cfs_period_seconds"      // cpu.cfs_period_us (a gauge)
)

// CPUStat is a cgroup's cpu.stat (hostfs.CPUStat).
type CPUStat = hostfs.CPUStat

// ParseCPUStat is hostfs.ParseCPUStat.
func ParseCPUStat(b []byte) (CPUStat, error) { return hostfs.ParseCPUStat(b) }

// ParseCPUAcctUsage is hostfs.ParseCPUAcctUsage.
func ParseCPUAcctUsage(b []byte) (int64, error) { return hostfs.ParseCPUAcctUsage(b) }

// AddCgroup reads the control plane's cgroup counters (cpuDir's cpu.stat, acctDir's cpuacct.usage; "" skips
// one) into snap. A counter that cannot be read is left out (the result then has no cgroup figure).
func AddCgroup(snap *prom.Snapshot, cpuDir, acctDir string) {
	if acctDir != "" {
		if b, err := os.ReadFile(filepath.Join(acctDir, "cpuacct.usage")); err == nil {
			if ns, err := ParseCPUAcctUsage(b); err == nil {
				snap.Families[famCgroupUsage] = counterFamily(famCgroupUsage, float64(ns)/1e9)
			}
		}
	}
	if cpuDir != "" {
		if b, err := os.ReadFile(filepath.Join(cpuDir, "cpu.stat")); err == nil {
			if s, err := ParseCPUStat(b); err == nil {
				snap.Families[famCgroupPeriods] = counterFamily(famCgroupPeriods, float64(s.Periods))
				snap.Families[famCgroupThrottled] = counterFamily(famCgroupThrottled, float64(s.Throttled))
				snap.Families[famCgroupThrottledSec] = counterFamily(famCgroupThrottledSec, s.ThrottledSeconds)
			}
		}
		if b, err := os.ReadFile(filepath.Join(cpuDir, "cpu.cfs_period_us")); err == nil {
			if us, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && us > 0 {
				snap.Families[famCgroupPeriodSeconds] = gaugeFamily(famCgroupPeriodSeconds, float64(us)/1e6)
			}
		}
	}
}

func gaugeFamily(name string, v float64) *dto.MetricFamily {
	return &dto.MetricFamily{Name: &name, Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &v}}}}
}

func counterFamily(name string, v float64) *dto.MetricFamily {
	return &dto.MetricFamily{Name: &name, Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: &v}}}}
}

// counterDelta is one unlabelled counter's increase between two snapshots; ok is false when absent.
func counterDelta(before, after *prom.Snapshot, fam string) (float64, bool) {
	d := prom.Delta(before, after, fam)
	if len(d) == 0 {
		return 0, false
	}
	return d[0].Value, true
}
