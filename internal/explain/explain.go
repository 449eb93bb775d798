package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Input is everything Explain reads: the objects, as Read gets them (or a test builds them).
type Input struct {
	Target  result.ExplainTarget
	Context string
	Tool    result.Tool
	Pods    []corev1.Pod
	// Events are the Events about the pods; OwnerEvents those about the controller that creates them (its
	// FailedCreate when the apiserver refused a pod).
	Events, OwnerEvents []corev1.Event
	// EventsErr is why Events could not be read (nil: they were).
	EventsErr error
	Network   Network
	// Job is the Job explained (nil for other kinds).
	Job *batchv1.Job
	// Now is when the objects were read; EventTTL the apiserver's --event-ttl (0: DefaultEventTTL).
	Now      time.Time
	EventTTL time.Duration
}

// Explain builds the explanation of in (pure).
func Explain(in Input) *result.Explanation {
	ttl := in.EventTTL
	if ttl == 0 {
		ttl = DefaultEventTTL
	}
	x := &result.Explanation{APIVersion: result.ExplanationAPIVersion, Kind: result.ExplanationKind, Tool: in.Tool, Context: in.Context,
		Target: in.Target, Read: in.Now.UTC(), Pods: []result.PodTimeline{}, Verdicts: []result.Finding{}}
	var causes []cause
	facts := map[string]podFacts{}
	for i := range in.Pods {
		p := &in.Pods[i]
		evs := podEvents(p, in.Events)
		pt, f := timeline(p, evs, in.EventsErr == nil, in.Network, in.Now, ttl)
		x.Pods = append(x.Pods, pt)
		facts[pt.Name] = f
		causes = append(causes, podCauses(pt, f)...)
	}
	causes = append(causes, dnsCauses(in.Pods, x.Pods)...)
	sort.SliceStable(x.Pods, func(i, j int) bool {
		if x.Pods[i].Seconds != x.Pods[j].Seconds {
			return x.Pods[i].Seconds > x.Pods[j].Seconds
		}
		return x.Pods[i].Name < x.Pods[j].Name
	})
	if in.Target.Kind != "pod" {
		x.Workload = workload(x.Pods, in.Job)
		if nc, ok := nodeCause(x.Pods); ok {
			causes = append(dropExplainedByNode(causes, nc, x.Pods), nc...)
		}
	}
	if c, ok := createCause(in); ok {
		causes = append(causes, c)
	}
	x.Verdicts = merge(causes, len(x.Pods))
	x.OutOfReach = outOfReach(in, x.Pods)
	return x
}

// merge folds the pods' causes into one verdict per cause and phase, each listing its pods (worst first), the
// causes holding the most time across the pods first.
func merge(cs []cause, pods int) []result.Finding {
	type group struct {
		cs    []cause
		total float64
	}
	by := map[string]*group{}
	var order []string
	for _, c := range cs {
		k := c.f.ID + "\x00" + c.phase
		g := by[k]
		if g == nil {
			g = &group{}
			by[k] = g
			order = append(order, k)
		}
		g.cs = append(g.cs, c)
		g.total += c.seconds
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := by[order[i]], by[order[j]]
		if a.total != b.total {
			return a.total > b.total
		}
		return order[i] < order[j]
	})
	out := []result.Finding{}
	for _, k := range order {
		g := by[k]
		sortCauses(g.cs)
		f := g.cs[0].f
		if pods > 1 && g.cs[0].pod != "" {
			n := map[string]bool{}
			for _, c := range g.cs {
				n[c.pod] = true
				if len(f.Items) < result.MaxItems {
					f.Items = append(f.Items, result.Item{Key: "pod=" + c.pod, Value: c.seconds, Summary: c.f.Summary})
				}
			}
			f.ItemCount = len(g.cs)
			f.Summary = fmt.Sprintf("on %d of %d pods; the slowest: %s", len(n), pods, f.Summary)
			f.Severity = maxSeverity(g.cs)
		} else if len(g.cs) > 1 {
			for _, c := range g.cs[1:] {
				f.Items = append(f.Items, c.f.Items...)
			}
			f.ItemCount = len(f.Items)
			f.Severity = maxSeverity(g.cs)
		}
		out = append(out, f)
	}
	return out
}

func maxSeverity(cs []cause) result.Severity {
	s := result.SeverityInfo
	for _, c := range cs {
		if c.f.Severity.Rank() > s.Rank() {
			s = c.f.Severity
		}
	}
	return s
}

// phaseOrder is where a phase sits in a timeline, for the workload's table.
func phaseOrder(name string) int {
	switch {
	case name == StepScheduling:
		return 0
	case name == StepSandbox:
		return 1
	case strings.HasPrefix(name, initPrefix):
		return 2
	case name == StepStart:
		return 3
	case name == StepReadiness:
		return 4
	}
	return 5
}

// phases are a pod's phases with a time (done, or pending: so far), by name.
func phases(pt result.PodTimeline) map[string]float64 {
	out := map[string]float64{}
	for _, s := range pt.Steps {
		if s.Within == "" && s.Name != StepEndpoints && s.Name != StepDNS && (s.Status == result.StepDone || s.Status == result.StepPending) {
			out[s.Name] = s.Seconds
		}
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// workload is the view across pods (sorted slowest first): each phase's median and max, the dominant phase,
// the slowest pods and, for a Job, the whole Job.
func workload(pods []result.PodTimeline, job *batchv1.Job) *result.WorkloadView {
	w := &result.WorkloadView{Pods: len(pods), Phases: []result.PhaseSpread{}, Slowest: []result.SlowPod{}}
	vals := map[string][]float64{}
	maxPod := map[string]string{}
	maxVal := map[string]float64{}
	total := 0.0
	for _, pt := range pods {
		if pt.Ready {
			w.Ready++
		}
		for name, v := range phases(pt) {
			vals[name] = append(vals[name], v)
			total += v
			if _, ok := maxPod[name]; !ok || v > maxVal[name] {
				maxPod[name], maxVal[name] = pt.Name, v
			}
		}
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if phaseOrder(names[i]) != phaseOrder(names[j]) {
			return phaseOrder(names[i]) < phaseOrder(names[j])
		}
		return names[i] < names[j]
	})
	best := 0.0
	for _, n := range names {
		sum := 0.0
		for _, v := range vals[n] {
			sum += v
		}
		ps := result.PhaseSpread{Name: n, Pods: len(vals[n]), MedianSeconds: median(vals[n]), MaxSeconds: maxVal[n], MaxPod: maxPod[n]}
		if total > 0 {
			ps.Share = sum / total
		}
		if sum > best {
			best, w.Dominant = sum, n
		}
		w.Phases = append(w.Phases, ps)
	}
	for _, pt := range pods[:min(5, len(pods))] {
		sp := result.SlowPod{Name: pt.Name, Node: pt.Node, Seconds: pt.Seconds}
		lv := -1.0
		for n, v := range phases(pt) {
			if v > lv || v == lv && n < sp.Phase {
				sp.Phase, lv = n, v
			}
		}
		w.Slowest = append(w.Slowest, sp)
	}
	if job != nil {
		w.Job = jobView(job, pods)
	}
	return w
}

// jobView: the Job's creation → every pod's containers started → every pod Ready.
func jobView(job *batchv1.Job, pods []result.PodTimeline) *result.JobView {
	v := &result.JobView{Created: job.CreationTimestamp.Time}
	want := len(pods)
	if job.Spec.Parallelism != nil && int(*job.Spec.Parallelism) > 0 && job.Spec.Completions != nil {
		want = min(want, int(*job.Spec.Completions))
	}
	var running, ready []time.Time
	completed := 0
	for _, pt := range pods {
		for _, s := range pt.Steps {
			switch {
			case s.Name == StepStart && s.Status == result.StepDone:
				running = append(running, s.End)
			case s.Name == StepReadiness && s.Status == result.StepDone:
				ready = append(ready, s.End)
			case s.Name == StepReadiness && s.Status == result.StepUnknown:
				completed++
			}
		}
	}
	latest := func(ts []time.Time) time.Time {
		var l time.Time
		for _, t := range ts {
			if t.After(l) {
				l = t
			}
		}
		return l
	}
	if len(running) >= want && want > 0 {
		v.AllRunning = latest(running)
		v.ToRunningSeconds = seconds(v.Created, v.AllRunning)
	}
	if len(ready) >= want && want > 0 {
		v.AllReady = latest(ready)
		v.ToReadySeconds = seconds(v.Created, v.AllReady)
	}
	var notes []string
	if completed > 0 {
		notes = append(notes, fmt.Sprintf("%d pod(s) have completed: their Ready condition no longer says when they became ready, so 'all Ready' is not known", completed))
	}
	if len(running) < want {
		notes = append(notes, fmt.Sprintf("%d of %d pods started", len(running), want))
	}
	v.Note = strings.Join(notes, "; ")
	return v
}

// nodeCause: a node whose pods spent much longer in a phase than the pods on the other nodes.
func nodeCause(pods []result.PodTimeline) ([]cause, bool) {
	byNode := map[string][]result.PodTimeline{}
	for _, pt := range pods {
		if pt.Node != "" {
			byNode[pt.Node] = append(byNode[pt.Node], pt)
		}
	}
	if len(byNode) < 2 {
		return nil, false
	}
	var out []cause
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, phase := range []string{StepSandbox, StepStart, StepReadiness} {
		for _, node := range nodes {
			var mine, others []float64
			worst, worstSec := "", -1.0
			for _, pt := range pods {
				v, ok := phases(pt)[phase]
				if !ok || pt.Node == "" {
					continue
				}
				if pt.Node == node {
					mine = append(mine, v)
					if v > worstSec {
						worst, worstSec = pt.Name, v
					}
				} else {
					others = append(others, v)
				}
			}
			if len(mine) == 0 || len(others) == 0 {
				continue
			}
			m, o := median(mine), median(others)
			ratio := m / maxf(o, 0.5)
			if m-o < NodeExcessSeconds || ratio <= NodeRatio {
				continue
			}
			sum := 0.0
			for _, v := range mine {
				sum += v
			}
			out = append(out, cause{phase: phase, seconds: sum, node: node, f: result.Finding{
				ID: IDNode, Severity: severityFor(m), Title: "A slow node: the same step took much longer there than on the other nodes",
				Summary: fmt.Sprintf("on %s the %s step took %s (median of %d pod(s); %s at most, on %s) against %s on the other nodes' %d pod(s)",
					node, phase, secs(m), len(mine), secs(worstSec), worst, secs(o), len(others)),
				Evidence: []result.Evidence{{Name: phase + "_seconds_median", Value: m, Unit: "seconds", Labels: map[string]string{"node": node, "step": phase}},
					{Name: phase + "_seconds_median_other_nodes", Value: o, Unit: "seconds", Labels: map[string]string{"step": phase}},
					{Name: "ratio", Value: ratio, Unit: "ratio", Labels: map[string]string{"node": node}}},
				Threshold: result.Threshold{Op: ">", Value: NodeRatio, Unit: "ratio", Source: "kubeslow's outlier rule, as KS-POD-NODE's: a node's median above twice the other nodes' (0.5 s at least, the timestamps' resolution) and 1 s or more slower"},
				Remediation: "Inspect that node: its CNI and IPAM (sandbox), its container runtime, disk and image cache (start), its CPU (readiness); " +
					"`kubeslow run` reads the nodes' kubelets and disks (nodes.kubelet, nodes.agent); cordon it if it stays slow.",
				Items: []result.Item{{Key: "node=" + node, Value: ratio, Summary: fmt.Sprintf("%s: %s vs %s", node, secs(m), secs(o))}}, ItemCount: 1,
			}})
		}
	}
	return out, len(out) > 0
}

// dropExplainedByNode leaves out the bare "longest step" verdicts of the pods on a slow node for the step that
// node is slow in: the node verdict explains them.
func dropExplainedByNode(cs, nodes []cause, pods []result.PodTimeline) []cause {
	nodeOf := map[string]string{}
	for _, pt := range pods {
		nodeOf[pt.Name] = pt.Node
	}
	slow := map[string]bool{}
	for _, n := range nodes {
		slow[n.node+"\x00"+n.phase] = true
	}
	out := cs[:0]
	for _, c := range cs {
		if c.f.ID == IDPhase && slow[nodeOf[c.pod]+"\x00"+c.phase] {
			continue
		}
		out = append(out, c)
	}
	return out
}

func maxf(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

// createCause: the controller's FailedCreate Events — the apiserver refused its pods (a ResourceQuota, a
// LimitRange, an admission webhook, Pod Security).
func createCause(in Input) (cause, bool) {
	n, msg := 0, ""
	var first, last time.Time
	kind, name := "", ""
	for i := range in.OwnerEvents {
		e := &in.OwnerEvents[i]
		if e.Reason != "FailedCreate" {
			continue
		}
		f, l, _ := eventTimes(e)
		n += eventCount(e)
		if first.IsZero() || f.Before(first) {
			first = f
		}
		if l.After(last) || msg == "" {
			last, msg = l, strings.TrimSpace(e.Message)
		}
		kind, name = e.InvolvedObject.Kind, e.InvolvedObject.Name
	}
	if n == 0 {
		return cause{}, false
	}
	// The time lost: from the first refusal to the last pod's creation after it (else the last refusal).
	end := last
	for _, p := range in.Pods {
		if t := p.CreationTimestamp.Time; t.After(first) && t.After(end) {
			end = t
		}
	}
	lost := seconds(first, end)
	detail, fix := "refused by the apiserver", "Read the message: an admission webhook or Pod Security rejected the pod spec; fix the spec or the policy."
	if l := strings.ToLower(msg); strings.Contains(l, "exceeded quota") {
		detail, fix = "a ResourceQuota", "The namespace's ResourceQuota is used up (the message names which resource): raise the quota, lower the pods' requests, or remove what holds it; during a rollout, maxSurge pods need room in the quota too."
	} else if strings.Contains(l, "limitrange") || strings.Contains(l, "maximum") && strings.Contains(l, "per container") {
		detail, fix = "a LimitRange", "A LimitRange rejects the pods' resources: bring the requests and limits within it."
	}
	return cause{phase: "create", seconds: lost, f: result.Finding{
		ID: IDCreate, Severity: severityFor(lost), Title: "The controller could not create pods: " + detail,
		Summary: fmt.Sprintf("%s %s got %d FailedCreate Event(s) from %s to %s (%s until its last pod was created): %q", kind, name, n,
			first.UTC().Format(time.TimeOnly), last.UTC().Format(time.TimeOnly), secs(lost), msg),
		Evidence: []result.Evidence{{Name: "failed_create_events", Value: float64(n), Unit: "count", Labels: map[string]string{strings.ToLower(kind): name}},
			{Name: "create_blocked_seconds", Value: lost, Unit: "seconds", Labels: map[string]string{strings.ToLower(kind): name}}},
		Threshold:   result.Threshold{Op: ">=", Value: 1, Unit: "count", Source: "the controller's FailedCreate Event: the apiserver refused a pod it created; the controller retries with back-off, so the pod's creationTimestamp comes late"},
		Remediation: fix,
	}}, true
}

// outOfReach lists what was not read: Events (forbidden, or expired before the start-up), EndpointSlices, DNS.
func outOfReach(in Input, pods []result.PodTimeline) []result.OutOfReach {
	var out []result.OutOfReach
	if in.EventsErr != nil {
		out = append(out, result.OutOfReach{Signal: "Events of the pods", Source: "events",
			Why: "not readable: " + in.EventsErr.Error() + "; the timelines come from conditions and container statuses alone (no pulls, no FailedScheduling, no probe failures)",
			Fix: "grant list on events in the namespace (the view ClusterRole has it)"})
	}
	lost := 0
	var lostSec float64
	for _, pt := range pods {
		if pt.Events.LostSeconds > 0 {
			lost++
			lostSec = maxf(lostSec, pt.Events.LostSeconds)
		}
	}
	if lost > 0 {
		out = append(out, result.OutOfReach{Signal: "Events of the start-up", Source: "events",
			Why: fmt.Sprintf("expired on %d pod(s) (up to %s of a start-up): the apiserver keeps an Event for --event-ttl (1 h by default) after its last update; those steps come from conditions only", lost, secs(lostSec)),
			Fix: "run kubeslow explain within the hour after a rollout, raise the apiserver's --event-ttl, or keep Events in a store (an event exporter)"})
	}
	if in.Network.SlicesErr != nil {
		out = append(out, result.OutOfReach{Signal: "EndpointSlices", Source: "endpointslices",
			Why: "not readable: " + in.Network.SlicesErr.Error(), Fix: "grant list on endpointslices.discovery.k8s.io and services in the namespace (the view ClusterRole has them)"})
	}
	for _, pt := range pods {
		for _, s := range pt.Steps {
			if s.Name == StepDNS && s.Status == result.StepNotMeasured {
				out = append(out, result.OutOfReach{Signal: "DNS: when " + s.Details["name"] + " became resolvable", Source: "dns",
					Why: "the cluster keeps no record of it; measuring it needs a query from a pod, and explain creates nothing",
					Fix: "measure Ready → resolvable with `kubeslow bench job` (a whole Indexed Job) or `kubeslow bench dns` (dns.readiness)"})
				return out
			}
		}
	}
	return out
}
