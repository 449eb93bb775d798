package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo/apislotest"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup/podstartuptest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/internal/source/prom/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// controlPlane is what kube-apiserver's and etcd's process metrics say over 20 s sampled every step: the
// cores each used, and the cores they have.
type controlPlane struct {
	apiCores, etcdCores float64
	cores               float64
	// throttled is the share of CFS periods in which the lab's control-plane cgroup ran out of its quota
	// (written as the kernel's cpu.stat and cpuacct.usage files, read by the measurement's own reader).
	throttled float64
	// sched is how long kube-apiserver's goroutines wait for a CPU (go_sched_latencies_seconds; 0: 50 µs, an
	// apiserver with CPU to spare).
	sched float64
	// node are the node tier's two reads of the components, 20 s apart (nil: no node tier).
	node [2][]cpnode.Component
}

// result runs the measurement's own observation (start, a sample every step, gather) over scripted scrapes.
func (c controlPlane) result(t *testing.T) result.Result {
	const steps = 10
	i := 0
	cg := t.TempDir()
	next := func(context.Context) (*prom.Snapshot, error) {
		e := promtest.NewExpo()
		secs := float64(i) * measure.ObserveStep.Seconds()
		e.Counter("process_cpu_seconds_total", "", 100+c.apiCores*secs)
		e.Gauge("process_resident_memory_bytes", "", 300<<20)
		e.Counter("etcd:process_cpu_seconds_total", "", 50+c.etcdCores*secs)
		e.Gauge("etcd:process_resident_memory_bytes", "", 60<<20)
		e.Gauge("apiserver_flowcontrol_nominal_limit_seats", `priority_level="workload-low"`, 24)
		e.Gauge("apiserver_flowcontrol_current_executing_seats", `priority_level="workload-low"`, 20*c.apiCores)
		e.Gauge("apiserver_current_inflight_requests", `request_kind="mutating"`, 30*c.apiCores)
		sched := c.sched
		if sched == 0 {
			sched = 50e-6
		}
		e.Hist("go_sched_latencies_seconds", "", 5000*i, sched)
		s := e.Snapshot(t, ruletest.T0.Add(time.Duration(i)*measure.ObserveStep))
		if c.throttled > 0 {
			periods := int64(secs * 10) // 100 ms CFS periods
			writeFile(t, filepath.Join(cg, "cpuacct.usage"), fmt.Sprint(int64((c.apiCores+c.etcdCores)*secs*1e9)))
			writeFile(t, filepath.Join(cg, "cpu.cfs_period_us"), "100000\n")
			writeFile(t, filepath.Join(cg, "cpu.stat"), fmt.Sprintf("nr_periods %d\nnr_throttled %d\nthrottled_time %d\nnr_bursts 0\nburst_time 0\n",
				periods, int64(float64(periods)*c.throttled), int64(secs*c.throttled*0.05*1e9)))
			cpusage.AddCgroup(s, cg, cg)
		}
		i++
		return s, nil
	}
	s := &measure.Scrapes{Scrape: next, Step: cpusage.Step, Analyze: func(_ context.Context, first, last *prom.Snapshot) (result.Result, error) {
		return cpusage.Analyze(first, last, c.cores, "control-plane node capacity"), nil
	}}
	obs, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range steps - 1 {
		obs.Sample(context.Background())
	}
	res, err := obs.Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cpusage.AddScrapeGaps(&res, cpusage.APIServer)(obs.Gaps())
	cpusage.FromSteps(&res)
	if c.node[1] != nil {
		cpusage.AddComponents(&res, cpusage.Components(c.node[0], c.node[1], 20), c.node[1])
	}
	return res
}

// nodeReads are the node tier's reads of kube-apiserver and etcd on node cp (2 cores) 20 s apart: each one's
// CPU seconds and run-queue wait over the 20 s, and the CPU limit of its own cgroup (0: none).
func nodeReads(apiCPU, apiWait, apiLimit, etcdCPU, etcdWait, etcdLimit float64) [2][]cpnode.Component {
	read := func(k float64) []cpnode.Component {
		mk := func(name string, pid int, cpu, wait, limit float64) cpnode.Component {
			c := cpnode.Component{Node: "cp", Name: name, PID: pid, NodeCores: 2, CPU: agent.ProcCPU{Seconds: 100 + k*cpu*20, SchedWaitSeconds: 10 + k*wait*20}}
			if limit > 0 {
				c.Cgroup = &agent.CgroupCPU{Version: 2, Path: "/kubepods/" + name, LimitCores: limit, LimitPath: "/kubepods/" + name}
			}
			return c
		}
		return []cpnode.Component{mk(agent.CompAPIServer, 10, apiCPU, apiWait, apiLimit), mk(agent.CompEtcd, 20, etcdCPU, etcdWait, etcdLimit)}
	}
	return [2][]cpnode.Component{read(0), read(1)}
}

// saturated is case E's control plane: 1.9 of 2 cores, its cgroup throttled in 80% of the CFS periods.
var saturated = controlPlane{apiCores: 1.5, etcdCores: 0.4, cores: 2, throttled: 0.8}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cpSaturated is a report of the control plane's usage, the API's, and pod start-up.
func cpSaturated(cp controlPlane, a apislotest.Server, p *podstartuptest.Run) func(t *testing.T) *result.Report {
	return func(t *testing.T) *result.Report {
		rs := []result.Result{cp.result(t), a.Result(t)}
		if p != nil {
			rs = append(rs, p.Result())
		}
		return ruletest.Report(nil, rs...)
	}
}

// TestControlPlaneSaturated: saturation is a cause only with an SLO breached (API or pod start-up), names its
// numbers, and names the 409 feedback loop when retries are a large share of the requests; busy within the
// SLOs, idle with a slow API, or cores unknown is not this finding.
func TestControlPlaneSaturated(t *testing.T) {
	cp := controlPlaneSaturatedRule()
	slowAPI := apislotest.Healthy
	slowAPI.GetLatency = 1.8
	storm := slowAPI
	storm.Conflicts = map[string]int{"ipamblocks": 6000}
	slowPods := podstartuptest.SlowScheduler
	for _, c := range []struct {
		name  string
		rep   func(t *testing.T) *result.Report
		fires bool
		want  []string
	}{
		{"slow API", cpSaturated(saturated, slowAPI, nil), true, []string{"used 1.9 of 2 (control-plane node capacity) cores", "throttled in 80% of its CFS periods", "API p99 was 2.48 s", "pod start-up p99 not measured"}},
		{"slow pods", cpSaturated(saturated, apislotest.Healthy, &slowPods), true, []string{"used 1.9 of 2", "pod start-up p99 20.1 s"}},
		{"conflict storm", cpSaturated(saturated, storm, nil), true, []string{"409 Conflict retries are"}},
		{"busy within SLOs", cpSaturated(saturated, apislotest.Healthy, nil), false, nil},
		{"slow API, idle control plane", cpSaturated(controlPlane{apiCores: 0.3, etcdCores: 0.1, cores: 2}, slowAPI, nil), false, nil},
		{"cores unknown", cpSaturated(controlPlane{apiCores: 1.5, etcdCores: 0.4}, slowAPI, nil), false, nil},
		// The node tier: two mechanisms named by component, and a healthy read that is not a finding.
		{"node tier: etcd's own limit used up", cpSaturated(controlPlane{apiCores: 0.3, etcdCores: 0.1, cores: 2,
			node: nodeReads(0.3, 0.01, 0, 0.1, 0.2, 0.1)}, slowAPI, nil), true,
			[]string{"the most saturated component, by " + cpusage.BasisComponentLimit + ": etcd on cp used 0.10 cores of 0.1 (CPU limit of its cgroup /kubepods/etcd, 100%)"}},
		{"node tier: kube-apiserver starved by its neighbours", cpSaturated(controlPlane{apiCores: 0.1, etcdCores: 0.05, cores: 2,
			node: nodeReads(0.1, 1.9, 0, 0.05, 0.01, 0)}, slowAPI, nil), true,
			[]string{"by " + cpusage.BasisRunQueueWait + ": kube-apiserver on cp used 0.10 cores of 2", "starved by its neighbours on the node"}},
		{"node tier: room to spare", cpSaturated(controlPlane{apiCores: 0.3, etcdCores: 0.1, cores: 2,
			node: nodeReads(0.3, 0.01, 0, 0.1, 0.005, 0)}, slowAPI, nil), false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.rep(t)
			fs, evals := rule.Evaluate(r, []rule.Rule{cp})
			if got := len(fs) == 1; got != c.fires {
				t.Fatalf("fired %v, want %v (%+v)", got, c.fires, evals)
			}
			// Cores unknown is not healthy: the rule is not evaluated, naming why.
			if c.name == "cores unknown" && (evals[0].Status != result.RuleNotEvaluated || !strings.Contains(evals[0].Reason, "control-plane")) {
				t.Errorf("cores unknown: %+v, want not evaluated", evals[0])
			}
			for _, w := range c.want {
				if !strings.Contains(fs[0].Summary, w) {
					t.Errorf("summary %q lacks %q", fs[0].Summary, w)
				}
			}
		})
	}
}

// starvedManaged is case E's starved apiserver where its cores are out of reach: its goroutines wait 80 ms for
// a CPU (a 0.1-core quota's 100 ms CFS periods), its own count says 0.09 cores.
var starvedManaged = controlPlane{apiCores: 0.09, sched: 0.08}

// TestAPITierSaturated: with the cores out of reach, a starved apiserver is named from its own /metrics — its
// goroutines' wait for a CPU with the API over its SLO — with APF's queueing, its own CPU count and the
// replica that answered; waiting within the SLO, an apiserver with CPU to spare under a slow API (a slow etcd
// disk), and the same apiserver where KS-CP-SATURATED names it with the cores are not this finding.
func TestAPITierSaturated(t *testing.T) {
	slowPods := podstartuptest.SlowScheduler
	slowAPI := apislotest.With(func(a *apislotest.Server) { a.GetLatency, a.APFWait, a.APFQueued = 1.8, 0.9, 14 })
	for _, c := range []struct {
		name  string
		rep   func(t *testing.T) *result.Report
		fires bool
		want  []string
	}{
		{"starved, API slow", cpSaturated(starvedManaged, slowAPI, nil), true, []string{"waited 0.0995 s (p99) for a CPU", "API p99 was 2.48 s (GET pods)",
			"workload-low requests queued 0.995 s p99 in APF", "up to 14 workload-low requests in APF queues", "used 0.09 cores", "one replica answered, started 2025-11-24", "source: the API tier"}},
		{"starved within the SLO", cpSaturated(starvedManaged, apislotest.Healthy, nil), false, nil},
		{"starved, pods slow", cpSaturated(starvedManaged, apislotest.Healthy, &slowPods), true, []string{"and pod start-up p99 20.1 s"}},
		{"CPU to spare, API slow", cpSaturated(controlPlane{apiCores: 0.3}, slowAPI, nil), false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, evals := rule.Evaluate(c.rep(t), []rule.Rule{apiTierSaturatedRule()})
			if got := len(fs) == 1; got != c.fires {
				t.Fatalf("fired %v, want %v (%+v)", got, c.fires, evals)
			}
			for _, w := range c.want {
				if !strings.Contains(fs[0].Summary, w) {
					t.Errorf("summary %q lacks %q", fs[0].Summary, w)
				}
			}
		})
	}
	// Where the node agent reached kube-apiserver on its node but its figures stay under KS-CP-SATURATED's
	// threshold (a hog beside it: 78% of its runnable time waiting, the API over its SLO), this finding says
	// where its CPU went instead of calling the cores out of reach.
	rep := cpSaturated(starvedManaged, slowAPI, nil)(t)
	usage := rep.Result(cpusage.Name)
	cpusage.AddComponents(usage, []cpusage.ComponentFigure{
		{Name: cpusage.APIServer, Node: "cp-1", Cores: 0.26, Available: 2, Basis: "its node's cores", Saturation: 0.13, WaitRate: 0.94, WaitShare: 0.78},
		{Name: cpusage.Etcd, Node: "cp-1", Cores: 0.04, Available: 2, Basis: "its node's cores", Saturation: 0.02, WaitRate: 0.19, WaitShare: 0.85},
	}, []cpnode.Component{{Name: cpusage.APIServer, Node: "cp-1", NodePSI: &agent.PSIPair{SomeAvg60: 63}}})
	fs, _ := rule.Evaluate(rep, []rule.Rule{controlPlaneSaturatedRule(), apiTierSaturatedRule()})
	if len(fs) != 1 || fs[0].ID != "KS-CP-SATURATED-API" {
		t.Fatalf("node tier under the threshold: %+v, want KS-CP-SATURATED-API alone", fs)
	}
	for _, w := range []string{"the node agent on cp-1: it used 0.26 cores and its threads waited 0.94 s per second for a CPU (78% of their runnable time)",
		"no CPU limit of its own: its neighbours on the node took the CPU", "tasks on cp-1 waited for a CPU 63% of the time (PSI)"} {
		if !strings.Contains(fs[0].Summary, w) {
			t.Errorf("summary %q lacks %q", fs[0].Summary, w)
		}
	}
	if strings.Contains(fs[0].Summary, "out of reach") {
		t.Errorf("summary %q calls the cores out of reach with the node tier's figures in the report", fs[0].Summary)
	}
	// Where the cores are known the same starvation is KS-CP-SATURATED's, and this finding folds under it.
	known := starvedManaged
	known.cores, known.throttled = 0.1, 0.9
	fs, _ = rule.Evaluate(cpSaturated(known, slowAPI, nil)(t), []rule.Rule{controlPlaneSaturatedRule(), apiTierSaturatedRule()})
	if len(fs) != 1 || fs[0].ID != "KS-CP-SATURATED" || len(fs[0].SeenAlso) != 1 || fs[0].SeenAlso[0].ID != "KS-CP-SATURATED-API" {
		t.Errorf("cores known: %d findings %+v, want KS-CP-SATURATED with the API tier's view under it", len(fs), fs)
	}
}
