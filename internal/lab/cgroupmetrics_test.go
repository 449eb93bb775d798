package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWriteCgroupMetrics: the control plane's cgroup files become cAdvisor's series for a raw cgroup (labelled
// by its id), in the text format Prometheus parses; without a quota (cpu.cfs_quota_us -1) the quota and period
// are left out, as cAdvisor leaves them out; a cgroup that cannot be read gives no series at all.
func TestWriteCgroupMetrics(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"cpuacct.usage":     "12500000000\n",
		"cpu.stat":          "nr_periods 1200\nnr_throttled 1188\nthrottled_time 95000000000\nnr_bursts 0\nburst_time 0\n",
		"cpu.cfs_quota_us":  "10000\n",
		"cpu.cfs_period_us": "100000\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parse := func() map[string]float64 {
		var b bytes.Buffer
		if err := WriteCgroupMetrics(&b, "/kubeslow-lab/control-plane", dir, dir); err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(&b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		out := map[string]float64{}
		for name, f := range fams {
			m := f.Metric[0]
			if l := m.Label[0]; l.GetName() != "id" || l.GetValue() != "/kubeslow-lab/control-plane" {
				t.Fatalf("%s labels %v", name, m.Label)
			}
			out[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return out
	}
	got := parse()
	for name, want := range map[string]float64{"container_cpu_usage_seconds_total": 12.5, "container_cpu_cfs_periods_total": 1200,
		"container_cpu_cfs_throttled_periods_total": 1188, "container_cpu_cfs_throttled_seconds_total": 95,
		"container_spec_cpu_quota": 10000, "container_spec_cpu_period": 100000} {
		if got[name] != want {
			t.Errorf("%s = %g, want %g", name, got[name], want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := parse()["container_spec_cpu_quota"]; ok {
		t.Error("a quota of -1 (none) exported")
	}
	var b bytes.Buffer
	if err := WriteCgroupMetrics(&b, "/x", filepath.Join(dir, "gone"), filepath.Join(dir, "gone")); err != nil || strings.TrimSpace(b.String()) != "" {
		t.Errorf("an absent cgroup gave %q, %v", b.String(), err)
	}
}
