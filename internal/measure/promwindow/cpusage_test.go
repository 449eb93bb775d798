package promwindow

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo/apislotest"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/promql/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// controlPlaneScrapes are three minutes of scrapes every 5 s of a control plane: kube-apiserver and etcd using
// apiCores and etcdCores (process_cpu_seconds_total, as their /metrics count it), cAdvisor's view of their
// static pods' containers (with a CPU quota and CFS throttling when quota > 0), and node_exporter on their host
// with two CPUs.
func controlPlaneScrapes(t *testing.T, t0 time.Time, apiCores, etcdCores, quota, throttled float64, cadvisor, nodeExporter, labCgroup bool) []promtest.Scrape {
	return starvedControlPlaneScrapes(t, t0, apiCores, apiCores, etcdCores, quota, throttled, 0, cadvisor, nodeExporter, labCgroup)
}

// starvedControlPlaneScrapes are controlPlaneScrapes of an apiserver that its own /metrics under-reports: it
// counts apiSeen cores of the apiCores its cgroup used, and every missEvery-th scrape of it fails (up 0, no
// series; 0: none fails), as a starved process answers late or not at all. Prometheus's own up and
// scrape_duration_seconds are written with each scrape, and node_exporter's PSI with a third of the time waiting.
func starvedControlPlaneScrapes(t *testing.T, t0 time.Time, apiCores, apiSeen, etcdCores, quota, throttled float64, missEvery int, cadvisor, nodeExporter, labCgroup bool) []promtest.Scrape {
	const host = "198.19.255.1"
	var out []promtest.Scrape
	for i := 0; i <= 36; i++ {
		at := t0.Add(time.Duration(i) * 5 * time.Second)
		secs := float64(i) * 5
		text := func(cores float64, extra string) []byte {
			return []byte(fmt.Sprintf("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n# TYPE up gauge\nup 1\n%s", 100+cores*secs, extra))
		}
		api := text(apiSeen, "# TYPE apiserver_request_total counter\napiserver_request_total{code=\"200\",verb=\"GET\",resource=\"pods\"} 1\n")
		if missEvery > 0 && i%missEvery == 1 {
			api = []byte("# TYPE up gauge\nup 0\n")
		}
		out = append(out,
			promtest.Scrape{At: at, Text: api, Labels: map[string]string{"job": "apiserver", "instance": host + ":6443"}},
			promtest.Scrape{At: at, Text: text(etcdCores, "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n"),
				Labels: map[string]string{"job": "etcd", "instance": host + ":2379"}})
		if cadvisor {
			type ctr struct {
				pod, container string
				cores          float64
			}
			ctrs := []ctr{{"kube-apiserver-cp", "kube-apiserver", apiCores}, {"etcd-cp", "etcd", etcdCores}, {"coredns-1", "coredns", 0.01}}
			periods := secs * 10 // 100 ms CFS periods
			var b strings.Builder
			for _, f := range []struct {
				name, typ string
				value     func(c ctr) float64
				limited   bool // only for containers under a quota
			}{
				{"container_cpu_usage_seconds_total", "counter", func(c ctr) float64 { return c.cores * secs }, false},
				{"container_spec_cpu_quota", "gauge", func(ctr) float64 { return quota / 2 * 100000 }, true},
				{"container_spec_cpu_period", "gauge", func(ctr) float64 { return 100000 }, true},
				{"container_cpu_cfs_periods_total", "counter", func(ctr) float64 { return periods }, true},
				{"container_cpu_cfs_throttled_periods_total", "counter", func(ctr) float64 { return math.Round(periods * throttled) }, true},
				{"container_cpu_cfs_throttled_seconds_total", "counter", func(ctr) float64 { return secs * throttled * 0.05 }, true},
			} {
				if f.limited && quota <= 0 {
					continue
				}
				fmt.Fprintf(&b, "# TYPE %s %s\n", f.name, f.typ)
				for _, c := range ctrs {
					if f.limited && c.container == "coredns" {
						continue
					}
					fmt.Fprintf(&b, "%s{namespace=\"kube-system\",pod=%q,container=%q} %g\n", f.name, c.pod, c.container, f.value(c))
				}
			}
			out = append(out, promtest.Scrape{At: at, Text: []byte(b.String()), Labels: map[string]string{"job": "cadvisor", "instance": "198.18.0.10:10250"}})
		}
		if labCgroup {
			// The lab's exporter of the control plane's shared cgroup, reading the kernel's files as written here.
			dir := t.TempDir()
			periods := int64(0) // the kernel counts CFS periods only under a quota
			if quota > 0 {
				periods = int64(secs * 10)
			}
			write := func(name, data string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("cpuacct.usage", fmt.Sprint(int64((apiCores+etcdCores)*secs*1e9)))
			write("cpu.stat", fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time %d\n", periods, int64(math.Round(float64(periods)*throttled)), int64(secs*throttled*0.05*1e9)))
			write("cpu.cfs_quota_us", fmt.Sprint(int64(quota*100000)))
			write("cpu.cfs_period_us", "100000\n")
			var b bytes.Buffer
			if err := lab.WriteCgroupMetrics(&b, "/kubeslow-lab/control-plane", dir, dir); err != nil {
				t.Fatal(err)
			}
			out = append(out, promtest.Scrape{At: at, Text: b.Bytes(), Labels: map[string]string{"job": "lab-control-plane-cgroup", "instance": host + ":9101"}})
		}
		if nodeExporter {
			var b strings.Builder
			fmt.Fprintf(&b, "# TYPE node_pressure_cpu_waiting_seconds_total counter\nnode_pressure_cpu_waiting_seconds_total %g\n", secs/3)
			b.WriteString("# TYPE node_uname_info gauge\nnode_uname_info{nodename=\"cp\"} 1\n# TYPE node_cpu_seconds_total counter\n")
			for cpu := range 2 {
				fmt.Fprintf(&b, "node_cpu_seconds_total{cpu=\"%d\",mode=\"idle\"} %g\nnode_cpu_seconds_total{cpu=\"%d\",mode=\"user\"} %g\n", cpu, 1000+secs/2, cpu, 500+secs/2)
			}
			out = append(out, promtest.Scrape{At: at, Text: []byte(b.String()), Labels: map[string]string{"job": "node", "instance": host + ":9100"}})
		}
	}
	return out
}

// labCgroupSel names a raw cgroup shared by kube-apiserver and etcd (the lab's) as cAdvisor labels it: not
// one of DefaultControlPlaneCgroups, so the user names it.
const labCgroupSel = `id="/kubeslow-lab/control-plane"`

// TestControlPlaneFromHistory: controlplane.usage from Prometheus counts kube-apiserver's and etcd's CPU from
// their process_cpu_seconds_total over the window and takes the cores they may use from the first source that
// has them (stated, cAdvisor's quota of their containers, node_exporter on their host), naming it; a 0.1-core
// quota used to the full with the API's p99 over its SLO fires KS-CP-SATURATED (with the containers' CFS
// throttling in its evidence), the host's two CPUs do not; without any source the rule is not evaluated,
// naming the series it lacks, never clear.
func TestControlPlaneFromHistory(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	slowAPI := apislotest.Healthy
	slowAPI.GetLatency = 1.8
	api := slowAPI.Result(t)
	for _, c := range []struct {
		name                   string
		quota, stated          float64
		cadvisor, nodeExporter bool
		labCgroup              bool
		wantCores              float64
		wantSource             string
		want                   result.RuleStatus
	}{
		{"cadvisor quota", 0.1, 0, true, true, false, 0.1, CoresQuota, result.RuleFired},
		{"the lab's cgroup quota", 0.1, 0, false, true, true, 0.1, CoresQuota, result.RuleFired},
		{"no quota: node_exporter's CPUs", 0, 0, true, true, false, 2, CoresNodeCPUs + " 198.19.255.1", result.RuleClear},
		{"the lab's cgroup without a quota: node_exporter's CPUs", 0, 0, false, true, true, 2, CoresNodeCPUs + " 198.19.255.1", result.RuleClear},
		{"stated", 0, 0.1, false, false, false, 0.1, CoresStated, result.RuleFired},
		{"no source", 0, 0, true, false, false, 0, "", result.RuleNotEvaluated},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := promtest.Start(t, controlPlaneScrapes(t, t0, 0.07, 0.03, c.quota, 0.8, c.cadvisor, c.nodeExporter, c.labCgroup))
			src := source(t, url, t0, t0.Add(3*time.Minute), nil)
			src.ControlPlaneCores = c.stated
			if c.labCgroup {
				src.ControlPlaneCgroups = []string{labCgroupSel} // --prometheus-control-plane-cgroup, as its user states it
			}
			res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewControlPlane(src))
			if !res.Status.Measured() {
				t.Fatalf("%s %s", res.Status, res.Reason)
			}
			near := func(name string, labels map[string]string, want float64) {
				t.Helper()
				m := res.Metric(name, labels)
				if m == nil || math.Abs(m.Value-want) > 0.03*want {
					t.Errorf("%s%v = %+v, want %g", name, labels, m, want)
				}
			}
			near(cpusage.MetricCPUCores, map[string]string{"component": cpusage.APIServer}, 0.07)
			near(cpusage.MetricCPUCores, map[string]string{"component": cpusage.All}, 0.1)
			near(cpusage.MetricCPUCoresBusiest, nil, 0.1)
			if c.wantCores > 0 {
				near(cpusage.MetricCoresAvailable, map[string]string{"source": c.wantSource}, c.wantCores)
				near(cpusage.MetricCPUSaturation, nil, 0.1/c.wantCores)
			} else if m := res.Metric(cpusage.MetricCoresAvailable, nil); m != nil {
				t.Errorf("cores available %+v without a source", m)
			}
			if c.quota > 0 {
				near(cpusage.MetricCgroupThrottledRatio, nil, 0.8)
			}
			if m := res.Metric(cpusage.MetricCPUCores, map[string]string{"component": cpusage.All}); m == nil || !strings.Contains(m.Labels["prometheus"], "process_cpu_seconds_total of job") {
				t.Errorf("cpu_cores without its series: %+v", m)
			}
			_, evals := rule.Evaluate(&result.Report{Results: []result.Result{res, api}}, check.Rules())
			for _, e := range evals {
				if e.ID != "KS-CP-SATURATED" {
					continue
				}
				if e.Status != c.want {
					t.Fatalf("KS-CP-SATURATED %s (%s), want %s", e.Status, e.Reason, c.want)
				}
				if c.want == result.RuleNotEvaluated && !strings.Contains(e.Reason, "container_spec_cpu_quota") {
					t.Errorf("not evaluated without naming the series: %s", e.Reason)
				}
			}
			if c.want == result.RuleFired {
				fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{res, api}}, check.Rules())
				for _, f := range fs {
					if f.ID == "KS-CP-SATURATED" {
						t.Logf("%s", f.Summary)
						if !strings.Contains(f.Summary, c.wantSource) || (c.quota > 0) != strings.Contains(f.Summary, "throttled in 80%") {
							t.Errorf("summary does not name the cores' source or the throttling: %s", f.Summary)
						}
					}
				}
			}
		})
	}
}

// TestControlPlaneStarvedFromHistory is the past window of TestIntegrationControlPlaneSaturation: kube-apiserver
// starved under a 0.1-core quota misses every other scrape and its own process_cpu_seconds_total reads 0.06
// cores, while cAdvisor's count of its cgroup (scraped from the kubelet) says the quota was used to the full and
// throttled in every period. KS-CP-SATURATED fires on the kernel's count, says so, and names the scrapes the
// apiserver missed and the host's CPU pressure; the processes' count alone would have read 0.65 of the cores.
func TestControlPlaneStarvedFromHistory(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	slowAPI := apislotest.Healthy
	slowAPI.GetLatency = 2.75
	api := slowAPI.Result(t)
	for _, labCgroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("lab cgroup %v", labCgroup), func(t *testing.T) {
			url := promtest.Start(t, starvedControlPlaneScrapes(t, t0, 0.09, 0.055, 0.01, 0.1, 1, 2, !labCgroup, true, labCgroup))
			src := source(t, url, t0, t0.Add(3*time.Minute), nil)
			if labCgroup {
				src.ControlPlaneCgroups = []string{labCgroupSel}
			}
			res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewControlPlane(src))
			if !res.Status.Measured() {
				t.Fatalf("%s %s", res.Status, res.Reason)
			}
			if m := res.Metric(cpusage.MetricCPUCores, map[string]string{"component": cpusage.All}); m == nil || m.Value > 0.07 {
				t.Errorf("the processes' own count: %+v, want the under-read ~0.065", m)
			}
			if m := res.Metric(cpusage.MetricCPUCoresBusiest, nil); m == nil || m.Labels["source"] != cpusage.BasisCgroupCPU || math.Abs(m.Value-0.1) > 0.005 {
				t.Errorf("busiest %+v, want 0.1 cores by the cgroup's count", m)
			}
			if m := res.Metric(cpusage.MetricCPUSaturation, nil); m == nil || m.Value < cpusage.SaturationThreshold {
				t.Errorf("saturation %+v, want >= %g", m, cpusage.SaturationThreshold)
			}
			if m := res.Metric(cpusage.MetricCgroupThrottledWindowShare, nil); m == nil || math.Abs(m.Value-1) > 0.05 {
				t.Errorf("throttled share of the window %+v, want ~1", m)
			}
			att, miss := res.Metric(cpusage.MetricScrapesAttempted, map[string]string{"component": cpusage.APIServer}), res.Metric(cpusage.MetricScrapesMissed, map[string]string{"component": cpusage.APIServer})
			if att == nil || miss == nil || att.Value < 30 || miss.Value < att.Value/2-2 || miss.Value > att.Value/2+2 {
				t.Errorf("apiserver scrapes attempted %+v, missed %+v: want half missed", att, miss)
			}
			if m := res.Metric(cpusage.MetricCPUPressure, nil); m == nil || math.Abs(m.Value-1.0/3) > 0.02 {
				t.Errorf("PSI %+v, want 1/3", m)
			}
			fs, evals := rule.Evaluate(&result.Report{Results: []result.Result{res, api}}, check.Rules())
			var f *result.Finding
			for i := range fs {
				if fs[i].ID == "KS-CP-SATURATED" {
					f = &fs[i]
				}
			}
			if f == nil {
				for _, e := range evals {
					if e.ID == "KS-CP-SATURATED" {
						t.Fatalf("KS-CP-SATURATED %s: %s", e.Status, e.Reason)
					}
				}
			}
			t.Log(f.Summary)
			for _, w := range []string{"used 0.10 (by the kernel's cgroup CPU time) of 0.1", "throttled in 100%", "kube-apiserver did not answer", "waited for a CPU 33%"} {
				if !strings.Contains(f.Summary, w) {
					t.Errorf("summary lacks %q: %s", w, f.Summary)
				}
			}
		})
	}
}

// TestControlPlaneSilentFromHistory: kube-apiserver starved so hard that it answered none of Prometheus's
// scrapes in the window (it did before). Discovery still finds its job (the signature before the window, its up
// series in it), api.responsiveness says its latency over the window is not known (absent: its rules are not
// evaluated, not clear), and KS-CP-SATURATED fires on the kernel's count of the cgroup with the unanswered
// scrapes standing for the API's latency.
func TestControlPlaneSilentFromHistory(t *testing.T) {
	// Silent from 60 s on (its signature before the window), and silent from the start (known by its job's
	// name only).
	for _, silentFrom := range []time.Duration{60 * time.Second, 0} {
		t.Run(fmt.Sprintf("silent from %s", silentFrom), func(t *testing.T) { silentControlPlane(t, silentFrom, false) })
	}
	// One scrape answered in the window (a 0.1-core apiserver in CI's run): no rate of its counters either.
	t.Run("one answer in the window", func(t *testing.T) { silentControlPlane(t, 60*time.Second, true) })
}

func silentControlPlane(t *testing.T, silentFrom time.Duration, oneAnswer bool) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	scrapes := starvedControlPlaneScrapes(t, t0, 0.09, 0.09, 0.01, 0.1, 1, 0, true, true, false)
	kept := false
	for i := range scrapes {
		if scrapes[i].Labels["job"] == "apiserver" && !scrapes[i].At.Before(t0.Add(silentFrom)) {
			if oneAnswer && !kept && !scrapes[i].At.Before(t0.Add(2*time.Minute)) {
				kept = true // inside the window (90 s to 3 min): this one answers
				continue
			}
			scrapes[i].Text = []byte("# TYPE up gauge\nup 0\n")
		}
	}
	if oneAnswer && !kept {
		t.Fatal("no apiserver scrape in the window to keep")
	}
	says := "answered none of Prometheus's"
	if oneAnswer {
		says = "answered 1 of Prometheus's"
	}
	url := promtest.Start(t, scrapes)
	src := source(t, url, t0.Add(90*time.Second), t0.Add(3*time.Minute), nil)
	rep := &result.Report{}
	for _, m := range []measure.Measurement{NewAPI(src), NewControlPlane(src)} {
		rep.Results = append(rep.Results, measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, m))
	}
	for _, r := range rep.Results {
		if !r.Status.Measured() {
			t.Fatalf("%s %s: %s", r.Name, r.Status, r.Reason)
		}
		t.Logf("%s: %s", r.Name, r.Reason)
	}
	if r := rep.Result("api.responsiveness"); !strings.Contains(r.Reason, says) {
		t.Errorf("api.responsiveness does not say the apiserver was silent: %q", r.Reason)
	}
	cp := rep.Result(cpusage.Name)
	if m := cp.Metric(cpusage.MetricScrapesMissed, map[string]string{"component": cpusage.APIServer}); m == nil || m.Value < 15 {
		t.Errorf("missed scrapes %+v", m)
	}
	fs, evals := rule.Evaluate(rep, check.Rules())
	var f *result.Finding
	for i := range fs {
		if fs[i].ID == "KS-CP-SATURATED" {
			f = &fs[i]
		}
	}
	for _, e := range evals {
		if e.ID == "KS-API-LATENCY" && e.Status != result.RuleNotEvaluated {
			t.Errorf("KS-API-LATENCY %s on an apiserver that answered nothing, want not evaluated", e.Status)
		}
		if e.ID == "KS-CP-SATURATED" && f == nil {
			t.Fatalf("KS-CP-SATURATED %s: %s", e.Status, e.Reason)
		}
	}
	t.Log(f.Summary)
	if !strings.Contains(f.Summary, "kube-apiserver did not answer") || !strings.Contains(f.Summary, "by the kernel's cgroup CPU time") {
		t.Errorf("summary: %s", f.Summary)
	}
}

// lateScrapes are three minutes of scrapes every 5 s of a control plane that uses its 2 cores to the full
// (kube-apiserver 1.5, etcd 0.5), whose starved apiserver answers three scrapes in a row of every twelve late by
// 4.5 s (within the scrape interval, which bounds Prometheus's scrape time-out). Prometheus stamps each sample
// with its scrape's start, but the counter reads the CPU used up to the answer: such a sample holds 4.5 s more CPU than its timestamp says.
// scrape_duration_seconds is written with each scrape, as Prometheus writes it.
func lateScrapes(t0 time.Time) []promtest.Scrape {
	const host = "198.19.255.1"
	var out []promtest.Scrape
	for i := 0; i <= 36; i++ {
		at := t0.Add(time.Duration(i) * 5 * time.Second)
		late := 0.05
		if i%12 >= 9 {
			late = 4.5
		}
		text := func(cores, dur float64, extra string) []byte {
			return []byte(fmt.Sprintf("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n# TYPE up gauge\nup 1\n"+
				"# TYPE scrape_duration_seconds gauge\nscrape_duration_seconds %g\n%s", 100+cores*(float64(i)*5+dur), dur, extra))
		}
		out = append(out,
			promtest.Scrape{At: at, Text: text(1.5, late, "# TYPE apiserver_request_total counter\napiserver_request_total{code=\"200\",verb=\"GET\",resource=\"pods\"} 1\n"),
				Labels: map[string]string{"job": "apiserver", "instance": host + ":6443"}},
			promtest.Scrape{At: at, Text: text(0.5, 0.01, "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n"),
				Labels: map[string]string{"job": "etcd", "instance": host + ":2379"}})
	}
	return out
}

// TestControlPlaneLateScrapes: a control plane at its 2 cores, whose apiserver answers some scrapes 4.5 s
// late. rate() over the samples' timestamps squeezed the late answers' CPU into the intervals before them (the
// busiest stretch read 2.04 of 2 cores; CI's starved lab said 2.4 of 2); each point is now the counter's
// increase over the time between its samples with the last one's scrape duration, so the busiest stretch is
// at most the 2 cores, and close to them.
func TestControlPlaneLateScrapes(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	url := promtest.Start(t, lateScrapes(t0))
	src := source(t, url, t0, t0.Add(3*time.Minute), nil)
	src.ControlPlaneCores = 2
	res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewControlPlane(src))
	if !res.Status.Measured() {
		t.Fatalf("%s %s", res.Status, res.Reason)
	}
	b := res.Metric(cpusage.MetricCPUCoresBusiest, nil)
	if b == nil || b.Value > 2 || b.Value < 1.8 {
		t.Fatalf("busiest %+v, want at most the 2 cores the control plane has (and above 1.8: it used them all)", b)
	}
	if s := res.Metric(cpusage.MetricCPUSaturation, nil); s == nil || s.Value > 1 {
		t.Errorf("saturation %+v above 1", s)
	}
	for _, ser := range res.Series {
		if ser.Name != cpusage.MetricCPUCores {
			continue
		}
		for _, p := range ser.Points {
			if p.V > 2.0001 {
				t.Errorf("%s at %s: %.3f cores of 2", ser.Name, p.T.Format("15:04:05"), p.V)
			}
		}
	}
}
