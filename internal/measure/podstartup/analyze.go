package podstartup

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "pods.startup"

// Metric names of the result: rules read them through these.
const (
	MetricPods   = "pods"
	MetricSLIP90 = "startup_sli_p90"
	MetricSLIP99 = "startup_sli_p99"
	// MetricTailPhaseShare and MetricTailPhaseMean are the slow tail's (pods at or above the p90) share of
	// time and mean seconds per phase (label phase).
	MetricTailPhaseShare = "tail_phase_share"
	MetricTailPhaseMean  = "tail_phase_mean"
	// MetricNodeSLIP50 is a node's median start-up (label node).
	MetricNodeSLIP50 = "node_sli_p50"
	// MetricNodesSLIP50 is the median of the nodes' medians.
	MetricNodesSLIP50 = "nodes_sli_p50"
	// MetricNodeSLIRatio is a node's median over the median of the nodes' medians, and MetricNodeSLIExcess
	// the seconds it is above it (labels node, phase: the phase in which the node differs most from the
	// others, pods: its pod count).
	MetricNodeSLIRatio  = "node_sli_ratio"
	MetricNodeSLIExcess = "node_sli_excess"
	// Creation (label creator: client or controller).
	MetricCreationRate          = "creation_rate"
	MetricCreationSpan          = "creation_span"
	MetricCreationRateRequested = "creation_rate_requested"
	// MetricCreateQPS and MetricCreateBurst are the shape of kubeslow's own load (label creator=client, load:
	// steady for burst 1, else burst): the rate its limiter allowed and how many creates it let go at once
	// first. Every result of pods it created carries them, beside the SLI (and its reason says them).
	MetricCreateQPS   = "create_qps"
	MetricCreateBurst = "create_burst"
	// MetricCreationRateRatio is the achieved creation rate over the rate kubeslow requested.
	MetricCreationRateRatio = "creation_rate_ratio"
	// MetricCreationLate is how much later than the requested pace kubeslow's creations ended (the first to the
	// last, against their count at the requested rate), 0 when on time.
	MetricCreationLate      = "creation_late"
	MetricClientLimiterWait = "client_limiter_wait"
	MetricCreateRequestP99  = "create_request_p99"
	// MetricNotStartedByReason counts pods that never started (label reason).
	MetricNotStartedByReason = "not_started_by_reason"
	// MetricPodsPreexisting counts the selected pods that existed before the watch started (left out).
	MetricPodsPreexisting = "pods_preexisting"
	// MetricSlowPods counts the slow pods: those whose start-up missed the SLO and those that never started
	// (pods kubeslow's own load could not fit left out).
	MetricSlowPods = "slow_pods"
	// MetricSlowPodEventShare is the share of the slow pods that had an Event of one class (labels class,
	// detail, phase: the phase it holds a pod in; events: how many times it happened; first, last: RFC 3339;
	// example: its latest message; own_limit: "true" for kubeslow's own pods turned away for the nodes' pod
	// limit).
	MetricSlowPodEventShare = "slow_pod_event_share"
)

// DefaultSLO is SIG Scalability's pod start-up SLO: p99 <= 5 s, creation to all containers started and
// observed via watch, image pulls excluded.
const DefaultSLO = 5 * time.Second

// Phases, in order. Each is measured from the end of the previous one.
var Phases = []string{"schedule", "sandbox", "start", "observe"}

// Input is what Analyze needs besides the timelines.
type Input struct {
	Timelines []Timeline
	SLO       time.Duration
	// Creator says who created the pods: "client" (kubeslow, at RequestedQPS with its limiter's Burst),
	// "controller" (a Deployment's ReplicaSet controller or a Job controller) or "others" (passive: pods
	// kubeslow did not create).
	Creator      string
	RequestedQPS float64
	// Burst is how many of kubeslow's creates its limiter let go at once first (client; 1: a steady rate).
	Burst int
	// ClientWait is how long kubeslow's own rate limiter held create requests back, in total.
	ClientWait time.Duration
	// CreateLatency is how long the apiserver took to accept each of kubeslow's creates (its own limiter
	// excluded).
	CreateLatency []time.Duration
	Expected      int
}

// phaseTimes are a pod's phase durations (seconds) and its SLI, computed without negative or impossible
// transitions: server timestamps (1 s precision) are clamped into the window the local watch times allow.
type phaseTimes struct {
	phase   map[string]float64
	sli     float64
	clamped bool
}

func clampBetween(t, lo, hi time.Time) (time.Time, bool) {
	if t.IsZero() {
		return lo, false
	}
	if t.Before(lo) {
		return lo, true
	}
	if !hi.IsZero() && t.After(hi) {
		return hi, true
	}
	return t, false
}

// phasesOf returns the phases of a pod that was seen Running.
func phasesOf(t Timeline) (phaseTimes, bool) {
	if t.SeenRunning.IsZero() || t.SeenCreated.IsZero() {
		return phaseTimes{}, false
	}
	// Creation: the watch saw the pod within milliseconds of its creation; the server's creationTimestamp is
	// truncated to the second, so the later of the two is the better estimate.
	created := t.SeenCreated
	if !t.Created.IsZero() && t.Created.After(created) {
		created = t.Created
	}
	sched := t.SeenScheduled
	if sched.IsZero() || sched.Before(created) {
		sched = created
	}
	if sched.After(t.SeenRunning) {
		sched = t.SeenRunning
	}
	sandbox, c1 := clampBetween(t.SandboxReady, sched, t.SeenRunning)
	startT, c2 := clampBetween(t.Started, sandbox, t.SeenRunning)
	p := phaseTimes{phase: map[string]float64{
		"schedule": sched.Sub(created).Seconds(),
		"sandbox":  sandbox.Sub(sched).Seconds(),
		"start":    startT.Sub(sandbox).Seconds(),
		"observe":  t.SeenRunning.Sub(startT).Seconds(),
	}, clamped: c1 || c2}
	p.sli = math.Max(0, t.SeenRunning.Sub(created).Seconds()-t.PullTime.Seconds())
	return p, true
}

func summary(add func(name, unit string, v float64, l map[string]string), name string, vals []float64, labels map[string]string) {
	s := stats.Sorted(vals)
	for _, q := range []struct {
		suffix string
		q      float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1}} {
		add(name+"_"+q.suffix, "seconds", stats.Percentile(s, q.q), labels)
	}
}

// Analyze turns timelines into the result: per-phase percentiles, the SLI and its verdict, per-pod records,
// per-node breakdown, the slow tail's dominant phase, creation rate, and pods that never started (pure).
func Analyze(in Input) (res result.Result) {
	if in.SLO <= 0 {
		in.SLO = DefaultSLO
	}
	res = result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	createLoad(add, in)
	// The load's shape goes beside the SLI in the reason, whatever the verdict: a p99 says little without it.
	measured := 0.0
	defer func() {
		if res.Reason != "" {
			res.Reason += "; "
		}
		res.Reason += LoadShape(in, measured)
	}()
	type podP struct {
		t Timeline
		p phaseTimes
	}
	var ok []podP
	var notStarted []Timeline
	clamped, preexisting := 0, 0
	for _, t := range in.Timelines {
		if t.SeenCreated.IsZero() {
			continue // an event for a pod the watch never saw (not ours)
		}
		if t.Preexisting {
			preexisting++ // there before the watch started: its start-up was not observed
			continue
		}
		p, fine := phasesOf(t)
		if !fine {
			notStarted = append(notStarted, t)
			continue
		}
		if p.clamped {
			clamped++
		}
		ok = append(ok, podP{t, p})
	}
	add(MetricPods, "count", float64(len(ok)+len(notStarted)), nil)
	add("pods_running", "count", float64(len(ok)), nil)
	add("pods_not_started", "count", float64(len(notStarted)), nil)
	add("timestamps_clamped", "count", float64(clamped), nil)
	add(MetricPodsPreexisting, "count", float64(preexisting), nil)
	if len(ok) == 0 {
		res.Status, res.Reason = result.StatusFail, fmt.Sprintf("no pod reached Running (%d created)", len(notStarted))
		addNotStarted(&res, notStarted)
		slowEvents(add, in, nil, notStarted)
		return res
	}
	var sli []float64
	per := map[string][]float64{}
	for _, x := range ok {
		sli = append(sli, x.p.sli)
		for ph, v := range x.p.phase {
			per[ph] = append(per[ph], v)
		}
		rec := result.Record{ID: x.t.Name, Labels: map[string]string{"node": x.t.Node},
			Values: map[string]float64{"sli_seconds": x.p.sli, "pull_seconds": x.t.PullTime.Seconds()},
			Times:  map[string]time.Time{"created": x.t.Created, "seen_created": x.t.SeenCreated, "seen_running": x.t.SeenRunning}}
		for ph, v := range x.p.phase {
			rec.Values[ph+"_seconds"] = v
		}
		res.Records = append(res.Records, rec)
	}
	summary(add, "startup_sli", sli, nil)
	for _, ph := range Phases {
		summary(add, "phase", per[ph], map[string]string{"phase": ph})
	}
	sorted := append([]float64(nil), sli...)
	sort.Float64s(sorted)
	p99 := stats.Percentile(sorted, 0.99)
	add("slo", "seconds", in.SLO.Seconds(), nil)

	// The slow tail: pods at or above the SLI's p90; which phase holds most of their time.
	p90 := stats.Percentile(sorted, 0.9)
	tail := map[string]float64{}
	var tailTotal float64
	tailPods := 0
	for _, x := range ok {
		if x.p.sli < p90 {
			continue
		}
		tailPods++
		for ph, v := range x.p.phase {
			tail[ph] += v
			tailTotal += v
		}
	}
	if tailTotal > 0 {
		for _, ph := range Phases {
			add(MetricTailPhaseShare, "ratio", tail[ph]/tailTotal, map[string]string{"phase": ph})
		}
		// The mean time a tail pod spent in each phase: an attribution is only as good as the timestamps it
		// rests on, and the server's have 1 s precision.
		for _, ph := range Phases {
			add(MetricTailPhaseMean, "seconds", tail[ph]/float64(tailPods), map[string]string{"phase": ph})
		}
	}
	cl2(add, in.Timelines)
	nodeBreakdown(add, ok2(ok, func(x podP) (string, float64, map[string]float64) { return x.t.Node, x.p.sli, x.p.phase }))
	measured = creationRate(add, in)
	addNotStarted(&res, notStarted)
	var late []Timeline
	for _, x := range ok {
		if x.p.sli > in.SLO.Seconds() {
			late = append(late, x.t)
		}
	}
	slowEvents(add, in, late, notStarted)
	if p99 > in.SLO.Seconds() {
		res.Status = result.StatusFail
		res.Reason = fmt.Sprintf("pod start-up p99 %.2f s > SLO %.0f s", p99, in.SLO.Seconds())
	} else if res.Reason == "" {
		res.Reason = fmt.Sprintf("pod start-up p99 %.3f s <= SLO %.0f s (%d pods)", p99, in.SLO.Seconds(), len(ok))
	}
	return res
}

type nodeSample struct {
	node  string
	sli   float64
	phase map[string]float64
}

func ok2[T any](xs []T, f func(T) (string, float64, map[string]float64)) []nodeSample {
	out := make([]nodeSample, len(xs))
	for i, x := range xs {
		out[i].node, out[i].sli, out[i].phase = f(x)
	}
	return out
}

// nodeBreakdown reports each node's median SLI, the median of the nodes' medians, and how each node
// compares with it: the ratio, the seconds above it, and the phase in which the node differs most from the
// other nodes' typical value. Which node is an outlier is the rules' call (KS-POD-NODE).
func nodeBreakdown(add func(string, string, float64, map[string]string), samples []nodeSample) {
	byNode := map[string][]nodeSample{}
	for _, s := range samples {
		byNode[s.node] = append(byNode[s.node], s)
	}
	if len(byNode) < 2 {
		return
	}
	med := func(v []float64) float64 { return stats.Percentile(stats.Sorted(v), 0.5) }
	names := make([]string, 0, len(byNode))
	for n := range byNode {
		names = append(names, n)
	}
	sort.Strings(names)
	nodeMed := map[string]float64{}
	nodePhase := map[string]map[string]float64{}
	var meds []float64
	phaseMeds := map[string][]float64{} // every node's median per phase, sorted below
	for _, n := range names {
		var v []float64
		ph := map[string][]float64{}
		for _, s := range byNode[n] {
			v = append(v, s.sli)
			for k, x := range s.phase {
				ph[k] = append(ph[k], x)
			}
		}
		nodeMed[n] = med(v)
		nodePhase[n] = map[string]float64{}
		for _, k := range Phases {
			nodePhase[n][k] = med(ph[k])
			phaseMeds[k] = append(phaseMeds[k], nodePhase[n][k])
		}
		meds = append(meds, nodeMed[n])
	}
	for _, k := range Phases {
		sort.Float64s(phaseMeds[k])
	}
	clusterMed := med(meds)
	add(MetricNodesSLIP50, "seconds", clusterMed, nil)
	for _, n := range names {
		add(MetricNodeSLIP50, "seconds", nodeMed[n], map[string]string{"node": n})
		// The phase that differs most from the other nodes' typical value.
		best, diff := "", math.Inf(-1)
		for _, ph := range Phases {
			if d := nodePhase[n][ph] - medianWithout(phaseMeds[ph], nodePhase[n][ph]); d > diff {
				best, diff = ph, d
			}
		}
		l := map[string]string{"node": n, "phase": best, "pods": fmt.Sprint(len(byNode[n]))}
		if clusterMed > 0 {
			add(MetricNodeSLIRatio, "ratio", nodeMed[n]/clusterMed, l)
		}
		add(MetricNodeSLIExcess, "seconds", nodeMed[n]-clusterMed, l)
	}
}

// medianWithout is the median (stats.Percentile 0.5) of sorted with one occurrence of v removed, without
// copying: the other nodes' typical value for every node in O(log n).
func medianWithout(sorted []float64, v float64) float64 {
	n := len(sorted) - 1
	if n <= 0 {
		return 0
	}
	j := sort.SearchFloat64s(sorted, v)
	i := max(0, min(int(math.Ceil(0.5*float64(n)))-1, n-1))
	if i >= j {
		i++
	}
	return sorted[i]
}

// creationRate compares how fast pods were created with what was requested, and says who set the pace:
// kubeslow's own client (its limiter's wait) or the controller. The rate is the pace through the middle of the
// creations as the watch saw them (from the one at the 10th percentile to the one at the 90th: a straggler at
// either end, one slow create or a watch event delivered late, is a latency, which create_request_p99 and
// the start-up SLI say, not the pace); the span is the first to the last.
func creationRate(add func(string, string, float64, map[string]string), in Input) float64 {
	var seen []time.Time
	for _, t := range in.Timelines {
		if !t.SeenCreated.IsZero() && !t.Preexisting {
			seen = append(seen, t.SeenCreated)
		}
	}
	n := len(seen)
	if n < 2 {
		return 0
	}
	slices.SortFunc(seen, time.Time.Compare)
	span := seen[n-1].Sub(seen[0]).Seconds()
	if span <= 0 {
		return 0
	}
	l := map[string]string{"creator": in.Creator}
	rate := centralRate(seen)
	add(MetricCreationRate, "pods_per_second", rate, l)
	add(MetricCreationSpan, "seconds", span, l)
	if in.Creator == "client" {
		add(MetricCreationRateRequested, "pods_per_second", in.RequestedQPS, l)
		if in.RequestedQPS > 0 {
			add(MetricCreationRateRatio, "ratio", rate/in.RequestedQPS, l)
			add(MetricCreationLate, "seconds", max(0, span-float64(n-1)/in.RequestedQPS), l)
		}
		add(MetricClientLimiterWait, "seconds", in.ClientWait.Seconds(), l)
	}
	if len(in.CreateLatency) > 0 {
		// Server-side: how long the apiserver took to accept each create (kubeslow's own limiter excluded).
		v := make([]float64, len(in.CreateLatency))
		for i, d := range in.CreateLatency {
			v[i] = d.Seconds()
		}
		add(MetricCreateRequestP99, "seconds", stats.Percentile(stats.Sorted(v), 0.99), nil)
	}
	return rate
}

// centralRate is the pace (per second) of sorted event times through their middle: intervals from the one at
// the 10th percentile to the one at the 90th over the time between them; over all of them when the middle
// spans no time (a burst seen at once).
func centralRate(sorted []time.Time) float64 {
	n := len(sorted)
	if n < 2 {
		return 0
	}
	i, j := int(math.Floor(0.1*float64(n-1))), int(math.Ceil(0.9*float64(n-1)))
	if d := sorted[j].Sub(sorted[i]).Seconds(); j > i && d > 0 {
		return float64(j-i) / d
	}
	if d := sorted[n-1].Sub(sorted[0]).Seconds(); d > 0 {
		return float64(n-1) / d
	}
	return 0
}

// createLoad records the shape of kubeslow's own load (client): the rate and the burst its limiter allowed.
func createLoad(add func(string, string, float64, map[string]string), in Input) {
	if in.Creator != "client" {
		return
	}
	burst := max(in.Burst, 1)
	l := map[string]string{"creator": "client", "load": "steady"}
	if burst > 1 {
		l["load"] = "burst"
	}
	add(MetricCreateQPS, "pods_per_second", in.RequestedQPS, l)
	add(MetricCreateBurst, "count", float64(burst), l)
}

// LoadShape says how the pods were created, for the result's reason: kubeslow's rate and burst (a steady
// rate with burst 1, as clusterloader2's qpsLoad), or, for pods a controller or others created, that the rate
// was not kubeslow's and what it measured (measured: pods per second from the first creation to the last,
// 0 when unknown).
func LoadShape(in Input, measured float64) string {
	at := ""
	if measured > 0 {
		at = " at a measured " + result.FormatValue(measured) + "/s"
	}
	switch in.Creator {
	case "client":
		if b := max(in.Burst, 1); b > 1 {
			return fmt.Sprintf("load: kubeslow created them at %g/s after a burst of %d at once (--create-burst %d)", in.RequestedQPS, b, b)
		}
		return fmt.Sprintf("load: kubeslow created them at a steady %g/s (burst 1)", in.RequestedQPS)
	case "controller":
		return "load: their controller created them" + at + " (its rate, not kubeslow's)"
	}
	return "load: created by others" + at + " (not kubeslow's rate)"
}

func addNotStarted(res *result.Result, ts []Timeline) {
	reasons := map[string]int{}
	for _, t := range ts {
		r := t.LastEvent
		if r == "" {
			r = "no event (still pending)"
		}
		reasons[r]++
		res.Records = append(res.Records, result.Record{ID: t.Name, Labels: map[string]string{"node": t.Node, "not_started": r}})
	}
	for r, n := range reasons {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricNotStartedByReason, Unit: "count", Value: float64(n), Labels: map[string]string{"reason": r}})
	}
}

// cl2Phases are clusterloader2's PodStartupLatency transitions (perf-tests 4b34154,
// clusterloader2/pkg/measurement/common/slos/pod_startup_latency.go), each between two of its phase times,
// all of them watch-receive times: create (the first event of the pod), schedule (the first with
// spec.nodeName), run (the first with status.phase Running) and watch (the same as run since it
// deprecated the kubelet's startedAt). So run_to_watch is 0 by construction.
var cl2Phases = []struct{ name, from, to string }{
	{"create_to_schedule", "create", "schedule"},
	{"schedule_to_run", "schedule", "run"},
	{"run_to_watch", "run", "watch"},
	{"schedule_to_watch", "schedule", "watch"},
	{"pod_startup", "create", "watch"},
	{"create_to_run", "create", "run"},
}

// cl2 computes clusterloader2's PodStartupLatency transitions from the same pods, its way: per transition,
// every pod that has both phase times, a negative latency counted as 0, nearest-rank quantiles, no image
// pull excluded. Reported as cl2_*{method="clusterloader2", phase=…}, so the two methods can be compared on
// one run.
func cl2(add func(string, string, float64, map[string]string), ts []Timeline) {
	phases := map[string][]float64{}
	for _, t := range ts {
		if t.Preexisting {
			continue
		}
		at := map[string]time.Time{"create": t.SeenCreated, "schedule": t.SeenScheduled, "run": t.SeenPhaseRunning, "watch": t.SeenPhaseRunning}
		for _, ph := range cl2Phases {
			from, to := at[ph.from], at[ph.to]
			if from.IsZero() || to.IsZero() {
				continue
			}
			phases[ph.name] = append(phases[ph.name], math.Max(0, to.Sub(from).Seconds()))
		}
	}
	for _, ph := range cl2Phases {
		if len(phases[ph.name]) > 0 {
			summary(add, "cl2", phases[ph.name], map[string]string{"phase": ph.name, "method": "clusterloader2"})
		}
	}
}

// PhasesOf returns the phase durations (seconds, by the names in Phases) and the start-up SLI of a pod that
// was seen Running; false otherwise.
func PhasesOf(t Timeline) (map[string]float64, float64, bool) {
	p, ok := phasesOf(t)
	return p.phase, p.sli, ok
}

// maxExample bounds an event's example message in a label.
const maxExample = 240

// slowEvents reports the Events of the slow pods (late: started after the SLO; notStarted: never) by class:
// which share of the slow pods each class was on, how often, when, and an example. kubeslow's own pods that
// found no pod slot (OwnLimit) are kubeslow's sizing, not slow pods.
func slowEvents(add func(string, string, float64, map[string]string), in Input, late, notStarted []Timeline) {
	own := in.Creator != "others"
	var slow [][]PodEvent
	for _, t := range late {
		slow = append(slow, t.Events)
	}
	for _, t := range notStarted {
		if own && OwnLimit(t.LastEvent) {
			continue
		}
		slow = append(slow, t.Events)
	}
	add(MetricSlowPods, "count", float64(len(slow)), nil)
	if len(slow) == 0 {
		return
	}
	for _, s := range summarizeEvents(slow) {
		ex := s.example
		if len(ex) > maxExample {
			ex = ex[:maxExample] + "…"
		}
		l := map[string]string{"class": s.class.Class, "detail": s.class.Detail, "phase": s.class.Phase, "events": fmt.Sprint(s.count),
			"pods": fmt.Sprint(s.pods), "first": stamp(s.first), "last": stamp(s.last), "example": ex}
		if own && s.class.Class == ClassScheduling && s.class.Detail == "Too many pods" {
			l["own_limit"] = "true"
		}
		add(MetricSlowPodEventShare, "ratio", float64(s.pods)/float64(len(slow)), l)
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
