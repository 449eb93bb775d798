package podstartup

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// pod scripts a timeline: created at c, scheduled after s, sandbox after sb, started after st, seen Running
// after obs (all offsets in seconds from the previous step).
func pod(name, node string, c, s, sb, st, obs float64) Timeline {
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	created := at(c)
	return Timeline{Name: name, Node: node,
		Created: created.Truncate(time.Second), SeenCreated: created.Add(2 * time.Millisecond),
		SeenScheduled: at(c + s), Scheduled: at(c + s).Truncate(time.Second),
		SandboxReady: at(c + s + sb).Truncate(time.Second), Started: at(c + s + sb + st).Truncate(time.Second),
		SeenRunning: at(c + s + sb + st + obs)}
}

func metric(t *testing.T, r result.Result, name string, labels map[string]string) float64 {
	t.Helper()
	m := r.Metric(name, labels)
	if m == nil {
		t.Fatalf("metric %s %v missing", name, labels)
	}
	return m.Value
}

func TestSlowNodeStandsOut(t *testing.T) {
	var ts []Timeline
	for i := 0; i < 80; i++ {
		node := fmt.Sprintf("n%d", i%4)
		sandbox := 0.3
		if node == "n2" {
			sandbox = 3.2 // a slow CNI on one node
		}
		ts = append(ts, pod(fmt.Sprintf("p%d", i), node, float64(i)*0.05, 0.1, sandbox, 0.2, 0.05))
	}
	r := Analyze(Input{Timelines: ts, Creator: "client", RequestedQPS: 20})
	// The slow node is more than twice as slow as the nodes' median and over 1 s slower, in the sandbox
	// phase; the others are at the median (KS-POD-NODE's thresholds are the rule's: see rules.go).
	m := r.Metric(MetricNodeSLIRatio, map[string]string{"node": "n2"})
	if m == nil || m.Labels["phase"] != "sandbox" || m.Value < 4 || metric(t, r, MetricNodeSLIExcess, map[string]string{"node": "n2"}) < 2.5 {
		t.Fatalf("slow node not named with its phase: %+v", r.Metrics)
	}
	for _, n := range []string{"n0", "n1", "n3"} {
		if v := metric(t, r, MetricNodeSLIRatio, map[string]string{"node": n}); v < 0.9 || v > 1.1 {
			t.Fatalf("healthy node %s at %v of the median", n, v)
		}
	}
	if got := metric(t, r, MetricNodesSLIP50, nil); got < 0.6 || got > 0.7 {
		t.Fatalf("nodes' median %v, want ~0.65", got)
	}
	if share := metric(t, r, "tail_phase_share", map[string]string{"phase": "sandbox"}); share < 0.7 {
		t.Fatalf("sandbox share of the tail = %v", share)
	}
	if r.Status != result.StatusPass { // p99 ~3.6 s, under 5 s
		t.Fatalf("status %s %s", r.Status, r.Reason)
	}
}

// TestMedianWithout: the other nodes' typical value, without copying, is the median of the list without
// the node's own value.
func TestMedianWithout(t *testing.T) {
	for _, c := range [][]float64{{1, 2}, {1, 2, 3}, {0.3, 0.3, 0.3, 3.2}, {1, 1, 2, 5, 9}, {4}} {
		for i, v := range c {
			others := append(append([]float64(nil), c[:i]...), c[i+1:]...)
			want := 0.0
			if len(others) > 0 {
				want = others[(len(others)+1)/2-1]
			}
			if got := medianWithout(c, v); got != want {
				t.Errorf("medianWithout(%v, %v) = %v, want %v", c, v, got, want)
			}
		}
	}
}

func TestSlowSchedulerDominatesAndFailsSLO(t *testing.T) {
	var ts []Timeline
	for i := 0; i < 100; i++ {
		// The scheduler binds 5 pods/s: the i-th waits i/5 s.
		ts = append(ts, pod(fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i%5), float64(i)*0.01, float64(i)/5, 0.2, 0.1, 0.02))
	}
	r := Analyze(Input{Timelines: ts})
	if r.Status != result.StatusFail || !strings.Contains(r.Reason, "SLO") {
		t.Fatalf("status %s %q", r.Status, r.Reason)
	}
	if share := metric(t, r, "tail_phase_share", map[string]string{"phase": "schedule"}); share < 0.9 {
		t.Fatalf("schedule share %v", share)
	}
	if p99 := metric(t, r, "phase_p99", map[string]string{"phase": "schedule"}); p99 < 19 || p99 > 20 {
		t.Fatalf("schedule p99 %v", p99)
	}
}

func TestNoNegativeOrImpossibleTransitions(t *testing.T) {
	// Server timestamps truncated to the second fall before the local times they follow; a clock skew puts
	// one after the pod was seen Running. Phases must stay >= 0 and sum to the SLI.
	p := pod("a", "n1", 0.9, 0.05, 0.05, 0.05, 0.01)
	p.Started = p.SeenRunning.Add(3 * time.Second)
	r := Analyze(Input{Timelines: []Timeline{p}})
	var sum float64
	for _, ph := range Phases {
		v := metric(t, r, "phase_max", map[string]string{"phase": ph})
		if v < 0 {
			t.Fatalf("phase %s negative: %v", ph, v)
		}
		sum += v
	}
	sli := metric(t, r, "startup_sli_max", nil)
	if d := sum - sli; d > 1e-9 || d < -1e-9 {
		t.Fatalf("phases sum %v != SLI %v", sum, sli)
	}
	if metric(t, r, "timestamps_clamped", nil) != 1 {
		t.Fatal("clamping not reported")
	}
}

func TestPullTimeExcluded(t *testing.T) {
	p := pod("a", "n1", 0, 0.1, 0.2, 6, 0.1)
	p.PullTime = 5800 * time.Millisecond
	r := Analyze(Input{Timelines: []Timeline{p}})
	if sli := metric(t, r, "startup_sli_p99", nil); sli > 0.7 || sli < 0.5 {
		t.Fatalf("SLI %v: the image pull was not excluded", sli)
	}
}

func TestControllerRateAndNotStarted(t *testing.T) {
	var ts []Timeline
	for i := 0; i < 200; i++ {
		ts = append(ts, pod(fmt.Sprintf("p%d", i), "n1", float64(i)/20, 0.1, 0.1, 0.1, 0.01)) // created at 20/s
	}
	stuck := Timeline{Name: "stuck", SeenCreated: t0, Created: t0, LastEvent: "FailedScheduling: 0/3 nodes are available"}
	r := Analyze(Input{Timelines: append(ts, stuck), Creator: "controller"})
	rate := metric(t, r, "creation_rate", map[string]string{"creator": "controller"})
	if rate < 19 || rate > 21 {
		t.Fatalf("creation rate %v", rate)
	}
	if metric(t, r, "pods_not_started", nil) != 1 || r.Metric("not_started_by_reason", map[string]string{"reason": "FailedScheduling: 0/3 nodes are available"}) == nil {
		t.Fatalf("not-started pod not reported: %+v", r.Metrics)
	}
	none := Analyze(Input{Timelines: []Timeline{stuck}})
	if none.Status != result.StatusFail || metric(t, none, "pods_running", nil) != 0 {
		t.Fatalf("all stuck: %s %s", none.Status, none.Reason)
	}
}

// TestCreationRateIgnoresStragglers: the creation rate is the pace through the middle of the creations, so a
// burst kept at the requested 20/s with its last pod seen 0.6 s late (one slow create, or its watch event
// delivered late: a healthy lab's busy moment, CI of 2026-11-30) is created at the rate requested, where the
// first-to-last rate put it at 16/s (below KS-POD-CREATE's 80%); a burst paced at 15/s throughout is still at
// 15/s. The span is still the first creation to the last.
func TestCreationRateIgnoresStragglers(t *testing.T) {
	for _, c := range []struct {
		name      string
		gap, late float64
		want      float64
	}{{"straggler", 0.05, 0.6, 20}, {"paced at 15/s", 1.0 / 15, 0, 15}} {
		var ts []Timeline
		for i := 0; i < 50; i++ {
			at := float64(i) * c.gap
			if i == 49 {
				at += c.late
			}
			ts = append(ts, pod(fmt.Sprintf("p%d", i), "n1", at, 0.1, 0.1, 0.1, 0.01))
		}
		r := Analyze(Input{Timelines: ts, Creator: "client", RequestedQPS: 20})
		client := map[string]string{"creator": "client"}
		if rate, ratio := metric(t, r, "creation_rate", client), metric(t, r, "creation_rate_ratio", client); math.Abs(rate-c.want) > 0.1 || math.Abs(ratio-c.want/20) > 0.01 {
			t.Errorf("%s: creation rate %.2f/s (ratio %.3f), want %g/s", c.name, rate, ratio, c.want)
		}
		if span, want := metric(t, r, "creation_span", client), 49*c.gap+c.late; math.Abs(span-want) > 0.01 {
			t.Errorf("%s: span %.3f s, want %.3f", c.name, span, want)
		}
	}
}

// TestClusterloader2Method checks the clusterloader2 phases (its current method: watch-receive times only)
// against hand-computed values on a scripted timeline: create = first sighting, schedule = first sighting
// with a node, run = watch = first sighting with phase Running; the server's whole-second timestamps play no
// part. A pod seen Running before its containers were all started counts for clusterloader2 from that
// sighting, and a pod that existed before the watch is left out.
func TestClusterloader2Method(t *testing.T) {
	a := pod("a", "n1", 0.4, 1.3, 0.5, 0.5, 0.05) // created 0.4 (seen 0.402), scheduled 1.7, seen Running 2.75
	a.SeenPhaseRunning = a.SeenRunning
	b := pod("b", "n1", 1.0, 0.01, 0.005, 0.005, 0.01) // seen 1.002, scheduled 1.01, phase Running 1.02, all started 1.03
	b.SeenPhaseRunning = t0.Add(1020 * time.Millisecond)
	old := pod("old", "n1", -60, 1, 1, 1, 1)
	old.SeenPhaseRunning, old.Preexisting = old.SeenRunning, true
	r := Analyze(Input{Timelines: []Timeline{a, b, old}})
	lab := map[string]string{"method": "clusterloader2"}
	for ph, want := range map[string][2]float64{
		"create_to_schedule": {0.008, 1.298}, "schedule_to_run": {0.01, 1.05}, "run_to_watch": {0, 0},
		"schedule_to_watch": {0.01, 1.05}, "pod_startup": {0.018, 2.348}, "create_to_run": {0.018, 2.348},
	} {
		lab["phase"] = ph
		// Nearest rank over 2 pods: p50 is the smaller, p90 and p99 the larger.
		for i, q := range []string{"cl2_p50", "cl2_p99"} {
			if got := metric(t, r, q, lab); got < want[i]-1e-6 || got > want[i]+1e-6 {
				t.Errorf("cl2 %s %s = %v, want %v", ph, q, got, want[i])
			}
		}
	}
	// kubeslow's own SLI ends when every container is seen started: b's 1.03 - 1.002.
	if sli := metric(t, r, "startup_sli_p50", nil); sli < 0.028-1e-6 || sli > 0.028+1e-6 {
		t.Errorf("kubeslow SLI p50 %v, want 0.028", sli)
	}
	if n := metric(t, r, MetricPods, nil); n != 2 || metric(t, r, MetricPodsPreexisting, nil) != 1 {
		t.Errorf("pods %v, preexisting %v: want 2 and 1", n, metric(t, r, MetricPodsPreexisting, nil))
	}
}

// TestLoadShape: every result states how its pods were created beside the SLI: kubeslow's rate and burst
// (create_qps, create_burst and the reason), or, for pods others or a controller created, that the rate was not
// kubeslow's and the rate measured.
func TestLoadShape(t *testing.T) {
	var ts []Timeline
	for i := 0; i < 50; i++ {
		ts = append(ts, pod(fmt.Sprintf("p%d", i), "n1", float64(i)/10, 0.01, 0.005, 0.005, 0.005)) // created at 10/s
	}
	for _, c := range []struct {
		burst      int
		load       string
		wantReason string
	}{
		{1, "steady", "load: kubeslow created them at a steady 10/s (burst 1)"},
		{0, "steady", "load: kubeslow created them at a steady 10/s (burst 1)"},
		{20, "burst", "load: kubeslow created them at 10/s after a burst of 20 at once (--create-burst 20)"},
	} {
		r := Analyze(Input{Timelines: ts, Creator: "client", RequestedQPS: 10, Burst: c.burst})
		l := map[string]string{"creator": "client", "load": c.load}
		if q, b := metric(t, r, MetricCreateQPS, l), metric(t, r, MetricCreateBurst, l); q != 10 || b != float64(max(c.burst, 1)) {
			t.Errorf("burst %d: create_qps %v create_burst %v", c.burst, q, b)
		}
		if !strings.HasPrefix(r.Reason, "pod start-up p99 ") || !strings.HasSuffix(r.Reason, "; "+c.wantReason) {
			t.Errorf("burst %d: reason %q, want the SLI then %q", c.burst, r.Reason, c.wantReason)
		}
	}
	// Nothing ran: the reason still says the load.
	stuck := Timeline{Name: "stuck", SeenCreated: t0, Created: t0}
	if r := Analyze(Input{Timelines: []Timeline{stuck}, Creator: "client", RequestedQPS: 10, Burst: 1}); !strings.HasPrefix(r.Reason, "no pod reached Running") ||
		!strings.Contains(r.Reason, "steady 10/s") || r.Metric(MetricCreateBurst, nil) == nil {
		t.Errorf("no pod ran: %q", r.Reason)
	}
	for creator, want := range map[string]string{
		"others":     "load: created by others at a measured 10/s (not kubeslow's rate)",
		"controller": "load: their controller created them at a measured 10/s (its rate, not kubeslow's)",
	} {
		r := Analyze(Input{Timelines: ts, Creator: creator})
		if !strings.HasSuffix(r.Reason, "; "+want) || r.Metric(MetricCreateQPS, nil) != nil || r.Metric(MetricCreateBurst, nil) != nil {
			t.Errorf("%s: reason %q, create_qps %v: want %q and no kubeslow rate", creator, r.Reason, r.Metric(MetricCreateQPS, nil), want)
		}
	}
	if r := Analyze(Input{Timelines: ts[:1], Creator: "others"}); !strings.HasSuffix(r.Reason, "; load: created by others (not kubeslow's rate)") {
		t.Errorf("one pod, no rate: %q", r.Reason)
	}
}
