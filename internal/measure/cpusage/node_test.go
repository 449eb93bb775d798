package cpusage

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func comp(name string, pid int, cpu, wait float64, limit float64, throttled uint64) cpnode.Component {
	c := cpnode.Component{Node: "cp", Name: name, PID: pid, NodeCores: 2, AllowedCPUs: 2,
		CPU:     agent.ProcCPU{Seconds: cpu, SchedWaitSeconds: wait},
		NodePSI: &agent.PSIPair{SomeAvg60: 42}}
	if limit > 0 {
		c.Cgroup = &agent.CgroupCPU{Version: 1, Path: "/cp", LimitCores: limit, LimitPath: "/cp", Throttling: &agent.Throttling{Periods: 100, Throttled: throttled}}
	}
	return c
}

// Two mechanisms: etcd confined to a 0.1-core limit uses all of it (named by its limit); kube-apiserver with no
// limit of its own, its threads waiting most of their runnable time (a hog beside it), is named as starved by
// its neighbours. A component restarted between the reads (another PID) is left out, not counted from zero.
func TestComponents(t *testing.T) {
	first := []cpnode.Component{comp(agent.CompEtcd, 10, 100, 1, 0.1, 0), comp(agent.CompAPIServer, 20, 50, 5, 0, 0), comp(agent.CompScheduler, 30, 5, 0, 0, 0)}
	last := []cpnode.Component{comp(agent.CompEtcd, 10, 102, 1.5, 0.1, 95), comp(agent.CompAPIServer, 20, 52, 25, 0, 0), comp(agent.CompScheduler, 31, 1, 0, 0, 0)}
	figs := Components(first, last, 20)
	if len(figs) != 2 {
		t.Fatalf("%d figures, want 2 (the restarted scheduler left out): %+v", len(figs), figs)
	}
	by := map[string]ComponentFigure{}
	for _, f := range figs {
		by[f.Name] = f
	}
	e := by[Etcd]
	if !e.OwnLimit || e.Available != 0.1 || e.Cores != 0.1 || e.Saturation < 0.99 || e.Throttled != 0.95 {
		t.Errorf("etcd %+v", e)
	}
	a := by[APIServer]
	if a.OwnLimit || a.Available != 2 || a.Cores != 0.1 || a.WaitRate != 1 || a.WaitShare < 0.9 {
		t.Errorf("kube-apiserver %+v", a)
	}
	if d := Describe(a); !strings.Contains(d, "starved by its neighbours") {
		t.Errorf("kube-apiserver not named starved: %s", d)
	}
	if d := Describe(e); strings.Contains(d, "neighbours") || !strings.Contains(d, "CPU limit of its cgroup /cp") {
		t.Errorf("etcd: %s", d)
	}

	// The most saturated component replaces a lower window figure, with its component and basis.
	res := result.Result{Metrics: []result.Metric{{Name: MetricCPUSaturation, Value: 0.3, Labels: map[string]string{"basis": BasisProcessCPU}}}}
	AddComponents(&res, figs, last)
	s := res.Metric(MetricCPUSaturation, nil)
	if s.Value < 0.99 || s.Labels["component"] != Etcd || s.Labels["basis"] != BasisComponentLimit || s.Labels["source"] != cpnode.SourceNodeAgent {
		t.Errorf("saturation %+v", s)
	}
	if p := res.Metric(MetricCPUPressure, map[string]string{"instance": "cp"}); p == nil || p.Value != 0.42 {
		t.Errorf("node PSI %+v", p)
	}
	// The pressure before the window is the first read's, once per node.
	first[0].NodePSI = &agent.PSIPair{SomeAvg60: 91}
	AddPressureBefore(&res, first)
	if p := res.Metric(MetricCPUPressureBefore, map[string]string{"instance": "cp"}); p == nil || p.Value != 0.91 {
		t.Errorf("node PSI before the window %+v", p)
	}
	n := 0
	for _, m := range res.Metrics {
		if m.Name == MetricCPUPressureBefore {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d pressure-before metrics for one node", n)
	}
	if m := res.Metric(MetricComponentWaitShare, map[string]string{"component": APIServer}); m == nil || m.Value < 0.9 {
		t.Errorf("wait share %+v", m)
	}

	// Only the starved apiserver: the run-queue wait is the basis.
	res = result.Result{}
	AddComponents(&res, []ComponentFigure{a}, last)
	if s := res.Metric(MetricCPUSaturation, nil); s == nil || s.Labels["basis"] != BasisRunQueueWait || s.Labels["component"] != APIServer {
		t.Errorf("saturation %+v", s)
	}

	// A component whose share is high on a few milliseconds of runnable time is not the figure: the hog case's
	// kube-scheduler (93% of 0.04 s per second) beside kube-apiserver (85%, 1.02 s per second lost) and etcd
	// (90%, 0.26 s per second) names etcd; the scheduler's share alone names nothing.
	sched := ComponentFigure{Name: "kube-scheduler", Node: "cp", Available: 2, WaitRate: 0.04, WaitShare: 0.93}
	api := ComponentFigure{Name: APIServer, Node: "cp", Cores: 0.18, Available: 2, WaitRate: 1.02, WaitShare: 0.85}
	etcd := ComponentFigure{Name: Etcd, Node: "cp", Cores: 0.03, Available: 2, WaitRate: 0.26, WaitShare: 0.90}
	res = result.Result{}
	AddComponents(&res, []ComponentFigure{sched, api, etcd}, last)
	if s := res.Metric(MetricCPUSaturation, nil); s == nil || s.Labels["component"] != Etcd || s.Value != 0.90 {
		t.Errorf("hog: saturation %+v, want etcd's 0.90 (kube-scheduler's 0.93 is of 0.04 s per second)", s)
	}
	if d := res.Metric(MetricCPUSaturation, nil).Labels["detail"]; !strings.Contains(d, "; kube-apiserver on cp lost the most: its threads waited 1.02 s per second for a CPU (85%") {
		t.Errorf("hog: the component that lost the most time is not said: %s", d)
	}
	// control-plane-neighbour's figures: kube-scheduler 100% of 0.29 s per second is the most starved by share,
	// kube-apiserver (95% of 2.43 s) lost the most; both said. Where the named one lost the most, nothing more.
	busySched := ComponentFigure{Name: "kube-scheduler", Node: "cp", Available: 2, WaitRate: 0.29, WaitShare: 1}
	api2 := ComponentFigure{Name: APIServer, Node: "cp", Cores: 0.12, Available: 2, WaitRate: 2.43, WaitShare: 0.95}
	res = result.Result{}
	AddComponents(&res, []ComponentFigure{busySched, api2}, last)
	if s := res.Metric(MetricCPUSaturation, nil); s == nil || s.Labels["component"] != "kube-scheduler" || s.Value != 1 ||
		!strings.Contains(s.Labels["detail"], "kube-apiserver on cp lost the most: its threads waited 2.43 s per second") {
		t.Errorf("neighbour: saturation %+v", s)
	}
	res = result.Result{}
	AddComponents(&res, []ComponentFigure{api2, etcd}, last)
	if d := res.Metric(MetricCPUSaturation, nil).Labels["detail"]; strings.Contains(d, "lost the most") {
		t.Errorf("the named component lost the most, yet: %s", d)
	}
	res = result.Result{}
	AddComponents(&res, []ComponentFigure{sched}, last)
	if s := res.Metric(MetricCPUSaturation, nil); s != nil && s.Labels["basis"] == BasisRunQueueWait {
		t.Errorf("kube-scheduler's 0.04 s per second made the saturation: %+v", s)
	}

	// A higher window figure stays.
	res = result.Result{Metrics: []result.Metric{{Name: MetricCPUSaturation, Value: 1.2, Labels: map[string]string{"basis": BasisThrottled}}}}
	AddComponents(&res, figs, last)
	if s := res.Metric(MetricCPUSaturation, nil); s.Value != 1.2 || s.Labels["component"] != "" {
		t.Errorf("saturation %+v", s)
	}
}

// kube-apiserver and etcd under one 0.1-core limit (the small-control-plane scenario's cgroup): etcd's own
// 0.01 core is not the figure, their 0.1 together is, and the sentence names the other component.
func TestComponentsSharedLimit(t *testing.T) {
	first := []cpnode.Component{comp(agent.CompEtcd, 10, 100, 0, 0.1, 0), comp(agent.CompAPIServer, 20, 50, 0, 0.1, 0)}
	last := []cpnode.Component{comp(agent.CompEtcd, 10, 100.2, 0, 0.1, 100), comp(agent.CompAPIServer, 20, 51.8, 0, 0.1, 100)}
	figs := Components(first, last, 20)
	for _, f := range figs {
		if f.Saturation < 0.99 || f.Saturation > 1.01 || len(f.SharedWith) != 1 {
			t.Errorf("%s: saturation %g shared with %v, want 1 with the other", f.Name, f.Saturation, f.SharedWith)
		}
	}
	if d := Describe(figs[0]); !strings.Contains(d, "shared with kube-apiserver: 100% used together") {
		t.Errorf("%s", d)
	}
}

// The cores kube-apiserver and etcd have together: the limit of a cgroup holding both, not the node's cores;
// etcd under another limit (or none): the node's cores.
func TestSharedCores(t *testing.T) {
	api, etcd := comp(agent.CompAPIServer, 1, 0, 0, 0.1, 0), comp(agent.CompEtcd, 2, 0, 0, 0.1, 0)
	if c, src := SharedCores(api, []cpnode.Component{api, etcd}); c != 0.1 || !strings.Contains(src, "cgroup /cp") {
		t.Errorf("shared limit: %g %s", c, src)
	}
	free := comp(agent.CompEtcd, 2, 0, 0, 0, 0)
	if c, src := SharedCores(api, []cpnode.Component{api, free}); c != 2 || !strings.Contains(src, "cores of cp") {
		t.Errorf("etcd unlimited: %g %s", c, src)
	}
}
