// Package explain is `kubeslow explain`: why one pod, rollout or Job took the time it took to start, read
// after the fact from the objects the cluster keeps (pods, their Events, EndpointSlices), creating nothing.
// Explain is pure (objects in, an Explanation out); Read does the reading through client-go.
package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Step names (a pull is "pull:IMAGE", an init container "init:NAME").
const (
	StepScheduling = "scheduling"
	StepSandbox    = "sandbox"
	StepStart      = "start"
	StepReadiness  = "readiness"
	StepEndpoints  = "endpoints"
	StepDNS        = "dns"
	initPrefix     = "init:"
	pullPrefix     = "pull:"
)

// DefaultEventTTL is the apiserver's --event-ttl default: Events older than this are gone.
const DefaultEventTTL = time.Hour

// endpointSliceManager is the field manager of the EndpointSlice controller's writes.
const endpointSliceManager = "endpointslice-controller"

// podFacts is what the verdicts read of one pod beside its timeline.
type podFacts struct {
	pod    *corev1.Pod
	events []corev1.Event
	pulls  []pullFact
	// oom: containers whose last termination was OOMKilled; backOffs counts CrashLoopBackOff Events.
	oom      []string
	backOffs int
	probe    probeFacts
}

// pullFact is one parsed Pulled Event with the phase it lies in.
type pullFact struct {
	Pulled
	within, container, node string
	done                    time.Time
}

// probeFacts are the readiness (and startup) probe settings of the container whose probes take the longest,
// and the failures the kubelet reported.
type probeFacts struct {
	container                              string
	initialDelay, period, successThreshold float64
	readinessFailures, startupFailures     int
	startupInitialDelay, startupPeriod     float64
	hasReadiness, hasStartup               bool
	expected                               float64
}

// eventTimes are an Event's first and last times and their precision: events.k8s.io writers (the scheduler)
// fill eventTime (µs) and a series; core/v1 writers (the kubelet) firstTimestamp and lastTimestamp (1 s).
func eventTimes(e *corev1.Event) (first, last time.Time, precision string) {
	if !e.EventTime.IsZero() {
		first, precision = e.EventTime.Time, result.PrecisionMicrosecond
		last = first
		if e.Series != nil && e.Series.LastObservedTime.After(last) {
			last = e.Series.LastObservedTime.Time
		}
		return first, last, precision
	}
	first, last = e.FirstTimestamp.Time, e.LastTimestamp.Time
	if last.IsZero() {
		last = first
	}
	if first.IsZero() {
		first = last
	}
	return first, last, result.PrecisionSecond
}

func eventCount(e *corev1.Event) int {
	n := int(e.Count)
	if e.Series != nil {
		n = max(n, int(e.Series.Count))
	}
	return max(n, 1)
}

func stepEvent(e *corev1.Event) result.StepEvent {
	first, last, prec := eventTimes(e)
	return result.StepEvent{Reason: e.Reason, Type: e.Type, Count: eventCount(e), First: first, Last: last,
		Message: strings.TrimSpace(e.Message), Precision: prec}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// seconds is b − a in seconds, never negative (whole-second timestamps can put b before a).
func seconds(a, b time.Time) float64 {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return 0
	}
	return b.Sub(a).Seconds()
}

// coarsest is the coarser of two precisions.
func coarsest(a, b string) string {
	rank := map[string]int{result.PrecisionMicrosecond: 1, result.PrecisionMillisecond: 2, result.PrecisionSecond: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// builder assembles one pod's steps, each phase from the end of the previous.
type builder struct {
	now      time.Time
	steps    []result.Step
	prev     time.Time
	prevPrec string
}

// phase adds a phase from the previous end to end (zero: not reached; then pending, timed to now).
func (b *builder) phase(name string, end time.Time, endPrec, source string) *result.Step {
	s := result.Step{Name: name, Start: b.prev, End: end, Source: source, Precision: coarsest(b.prevPrec, endPrec), Status: result.StepDone}
	switch {
	case b.prev.IsZero():
		s.Status, s.Note = result.StepPending, "the previous step has not ended"
		s.End = time.Time{}
	case end.IsZero():
		s.Status, s.Seconds = result.StepPending, seconds(b.prev, b.now)
		s.Note = "not finished when read: seconds so far"
	default:
		if end.Before(b.prev) {
			// Whole-second timestamps: the end may read up to 1 s before the start; the step took under 1 s.
			end = b.prev
			s.End = end
		}
		s.Seconds = seconds(b.prev, end)
	}
	b.steps = append(b.steps, s)
	if s.Status == result.StepDone {
		b.prev, b.prevPrec = s.End, endPrec
	} else {
		b.prev = time.Time{}
	}
	return &b.steps[len(b.steps)-1]
}

// unknownPhase adds a phase its source holds no time for; the next phase starts where this one would have.
func (b *builder) unknownPhase(name, source, note string) {
	b.steps = append(b.steps, result.Step{Name: name, Start: b.prev, Source: source, Precision: result.PrecisionSecond,
		Status: result.StepUnknown, Note: note})
}

// podEvents are the Events about p (by UID, or by name for Events that carry none).
func podEvents(p *corev1.Pod, evs []corev1.Event) []corev1.Event {
	var out []corev1.Event
	for _, e := range evs {
		io := e.InvolvedObject
		if io.Kind != "" && io.Kind != "Pod" {
			continue
		}
		if io.UID != "" && io.UID == p.UID || io.UID == "" && io.Name == p.Name && (io.Namespace == "" || io.Namespace == p.Namespace) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _, _ := eventTimes(&out[i])
		b, _, _ := eventTimes(&out[j])
		return a.Before(b)
	})
	return out
}

// classified are the events of evs whose class holds the given phase.
func classified(evs []corev1.Event, phase string) []result.StepEvent {
	var out []result.StepEvent
	for i := range evs {
		if c, ok := podstartup.ClassifyEvent(evs[i].Reason, evs[i].Message); ok && c.Phase == phase {
			out = append(out, stepEvent(&evs[i]))
		}
	}
	return out
}

// containerOf reads an Event's fieldPath: "spec.initContainers{NAME}" or "spec.containers{NAME}".
func containerOf(fieldPath string) (name string, init bool) {
	for _, p := range []struct {
		prefix string
		init   bool
	}{{"spec.initContainers{", true}, {"spec.containers{", false}} {
		if rest, ok := strings.CutPrefix(fieldPath, p.prefix); ok {
			return strings.TrimSuffix(rest, "}"), p.init
		}
	}
	return "", false
}

// timeline builds one pod's steps. evs are the pod's own Events; readable says whether Events could be read.
func timeline(p *corev1.Pod, evs []corev1.Event, readable bool, net Network, now time.Time, ttl time.Duration) (result.PodTimeline, podFacts) {
	f := podFacts{pod: p, events: evs}
	pt := result.PodTimeline{Name: p.Name, Node: p.Spec.NodeName, Created: p.CreationTimestamp.Time, Ready: kube.PodTrueSince(p, corev1.PodReady) != time.Time{}}
	b := &builder{now: now, prev: p.CreationTimestamp.Time, prevPrec: result.PrecisionSecond}

	// Scheduling: creation → PodScheduled, or the scheduler's Scheduled Event (µs) when it is still there.
	end, endPrec, src := kube.PodTrueSince(p, corev1.PodScheduled), result.PrecisionSecond, "creationTimestamp → condition PodScheduled"
	for i := range evs {
		if evs[i].Reason == "Scheduled" {
			if t, _, prec := eventTimes(&evs[i]); prec == result.PrecisionMicrosecond && !end.IsZero() {
				end, endPrec, src = t, prec, "creationTimestamp → Event Scheduled (eventTime)"
			}
		}
	}
	s := b.phase(StepScheduling, end, endPrec, src)
	s.Events = classified(evs, "schedule")
	for i := range evs {
		if evs[i].Reason == "Preempted" || evs[i].Reason == "Preempting" {
			s.Events = append(s.Events, stepEvent(&evs[i]))
		}
	}
	if n := p.Status.NominatedNodeName; n != "" {
		s.Details = map[string]string{"nominated_node": n}
	}
	if len(s.Events) > 0 {
		last := s.Events[len(s.Events)-1]
		for _, e := range s.Events {
			if e.Reason == "FailedScheduling" {
				last = e
			}
		}
		if last.Reason == "FailedScheduling" {
			if s.Details == nil {
				s.Details = map[string]string{}
			}
			s.Details["reason"] = podstartup.SchedulingDetail(last.Message)
		}
	}

	// Sandbox and network: PodReadyToStartContainers (kubelet 1.29+; kwok and older kubelets do not set it).
	sandboxEvents := classified(evs, "sandbox")
	if c := condition(p, corev1.PodReadyToStartContainers); c == nil {
		b.unknownPhase(StepSandbox, "condition PodReadyToStartContainers (absent)",
			"the node sets no PodReadyToStartContainers condition (kubelet before 1.29, or a simulated node): the sandbox's time is counted in the next step")
		b.steps[len(b.steps)-1].Events = sandboxEvents
	} else {
		s := b.phase(StepSandbox, kube.PodTrueSince(p, corev1.PodReadyToStartContainers), result.PrecisionSecond, "condition PodScheduled → condition PodReadyToStartContainers")
		s.Events = sandboxEvents
		if d := sandboxDetail(sandboxEvents); d != "" {
			s.Details = map[string]string{"reason": d}
		}
	}

	pulls := pullSteps(p, evs)
	for i := range pulls {
		f.pulls = append(f.pulls, pulls[i].fact)
	}
	addPulls := func(within string) {
		for _, ps := range pulls {
			if ps.fact.within == within {
				b.steps = append(b.steps, ps.step)
			}
		}
	}

	// Init containers, in order: each from the previous end to its finishedAt (its image pull included), or
	// to its start for a sidecar (restartPolicy Always).
	for _, c := range p.Spec.InitContainers {
		name := initPrefix + c.Name
		st := initStatus(p, c.Name)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		var end time.Time
		vals := map[string]float64{}
		det := map[string]string{"container": c.Name, "image": c.Image}
		src := "initContainerStatuses[].state.terminated finishedAt"
		switch {
		case st == nil:
		case sidecar:
			src = "initContainerStatuses[].state.running startedAt (a sidecar: restartPolicy Always)"
			if r := st.State.Running; r != nil {
				end = r.StartedAt.Time
			}
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			t := st.State.Terminated
			end = t.FinishedAt.Time
			vals["run_seconds"] = seconds(t.StartedAt.Time, t.FinishedAt.Time)
			vals["exit_code"] = float64(t.ExitCode)
			if !b.prev.IsZero() {
				vals["before_run_seconds"] = seconds(b.prev, t.StartedAt.Time)
			}
		}
		if st != nil {
			vals["restarts"] = float64(st.RestartCount)
			if lt := st.LastTerminationState.Terminated; lt != nil && lt.Reason != "" {
				det["last_state_reason"] = lt.Reason
				if lt.Reason == "OOMKilled" {
					f.oom = append(f.oom, c.Name)
				}
			}
			if w := st.State.Waiting; w != nil {
				det["waiting_reason"] = w.Reason
			}
		}
		if lim, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			vals["cpu_limit_cores"] = lim.AsApproximateFloat64()
		}
		s := b.phase(name, end, result.PrecisionSecond, "the previous step → "+src)
		s.Values, s.Details = vals, det
		addPulls(name)
	}

	// Containers started: the latest startedAt once every container runs (a completed pod's from its
	// terminated state). After restarts, startedAt is the latest start: the crash loop is inside this step.
	started, waiting := containersStarted(p)
	s = b.phase(StepStart, started, result.PrecisionSecond, "the previous step → latest containerStatuses[].state.running.startedAt")
	s.Events = classified(evs, "start")
	restarts := 0
	det := map[string]string{}
	for _, cs := range p.Status.ContainerStatuses {
		restarts += int(cs.RestartCount)
		if lt := cs.LastTerminationState.Terminated; lt != nil && lt.Reason != "" {
			det["last_state_reason:"+cs.Name] = lt.Reason
			if lt.Reason == "OOMKilled" {
				f.oom = append(f.oom, cs.Name)
			}
		}
	}
	for _, is := range p.Status.InitContainerStatuses {
		restarts += int(is.RestartCount)
	}
	for c, r := range waiting {
		det["waiting_reason:"+c] = r
	}
	if len(det) > 0 {
		s.Details = det
	}
	if restarts > 0 {
		s.Values = map[string]float64{"restarts": float64(restarts)}
		s.Note = "startedAt is the latest (re)start: the time to it includes every crash and back-off"
	}
	for _, e := range s.Events {
		if e.Reason == "BackOff" && strings.Contains(strings.ToLower(e.Message), "restarting") {
			f.backOffs += e.Count
		}
	}
	pt.Restarts = restarts
	addPulls(StepStart)

	// Readiness: containers started → Ready, read against the probes.
	f.probe = probes(p, evs)
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		b.unknownPhase(StepReadiness, "condition Ready", "the pod has completed: its Ready condition now says when it stopped being ready")
	} else {
		s = b.phase(StepReadiness, kube.PodTrueSince(p, corev1.PodReady), result.PrecisionSecond, "the previous step → condition Ready")
		s.Events = classified(evs, podstartup.PhaseReady)
		s.Values = f.probe.values()
		if f.probe.container != "" {
			s.Details = map[string]string{"container": f.probe.container}
		}
	}

	// In the Services' EndpointSlices, and resolvable by DNS.
	if es, ok := endpointsStep(p, net, kube.PodTrueSince(p, corev1.PodReady)); ok {
		b.steps = append(b.steps, es)
	}
	if ds, ok := dnsStep(p, net); ok {
		b.steps = append(b.steps, ds)
	}

	pt.Steps = b.steps
	pt.Seconds = podSeconds(p, pt, now)
	pt.Events = coverage(p, pt, evs, readable, now, ttl)
	return pt, f
}

// podSeconds is created → Ready; for a completed pod → containers started; else → now.
func podSeconds(p *corev1.Pod, pt result.PodTimeline, now time.Time) float64 {
	if r := kube.PodTrueSince(p, corev1.PodReady); !r.IsZero() {
		return seconds(pt.Created, r)
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		for _, s := range pt.Steps {
			if s.Name == StepStart && s.Status == result.StepDone {
				return seconds(pt.Created, s.End)
			}
		}
	}
	return seconds(pt.Created, now)
}

func sandboxDetail(evs []result.StepEvent) string {
	for _, e := range evs {
		l := strings.ToLower(e.Message)
		switch {
		case strings.Contains(l, "ipam") || strings.Contains(l, "failed to allocate") || strings.Contains(l, "no ip addresses") ||
			strings.Contains(l, "range is full"):
			return "IPAM"
		case e.Reason == "FailedCreatePodSandBox" || e.Reason == "FailedPodSandBoxStatus":
			c, _ := podstartup.ClassifyEvent(e.Reason, e.Message)
			return c.Detail
		case e.Reason == "FailedMount" || e.Reason == "FailedAttachVolume":
			return e.Reason
		}
	}
	return ""
}

func initStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// containersStarted is the latest start of the pod's containers once all have started, and the reasons of
// those still waiting.
func containersStarted(p *corev1.Pod) (time.Time, map[string]string) {
	waiting := map[string]string{}
	var last time.Time
	n := 0
	for _, cs := range p.Status.ContainerStatuses {
		t := startedAt(cs)
		if cs.State.Waiting != nil {
			waiting[cs.Name] = cs.State.Waiting.Reason
		}
		if !t.IsZero() {
			n++
			if t.After(last) {
				last = t
			}
		}
	}
	if n == 0 || n < len(p.Spec.Containers) {
		return time.Time{}, waiting
	}
	return last, waiting
}

// pullStep is a pull's step and its facts.
type pullStep struct {
	step result.Step
	fact pullFact
}

// pullSteps reads the kubelet's Pulling and Pulled Events: one step per Pulled Event object (a recurring pull
// keeps its latest), within the phase of its container, and a pending step for a Pulling with no Pulled.
func pullSteps(p *corev1.Pod, evs []corev1.Event) []pullStep {
	var out []pullStep
	pulling := map[string]time.Time{} // fieldPath + image → the Pulling Event's latest time
	for i := range evs {
		if evs[i].Reason == "Pulling" {
			if img, ok := pullingImage(evs[i].Message); ok {
				_, last, _ := eventTimes(&evs[i])
				pulling[evs[i].InvolvedObject.FieldPath+"\x00"+img] = last
			}
		}
	}
	done := map[string]bool{}
	for i := range evs {
		e := &evs[i]
		if e.Reason != "Pulled" {
			continue
		}
		pl, ok := ParsePulled(e.Message)
		if !ok {
			continue
		}
		c, init := containerOf(e.InvolvedObject.FieldPath)
		within := StepStart
		if init {
			within = initPrefix + c
		}
		_, last, _ := eventTimes(e)
		key := e.InvolvedObject.FieldPath + "\x00" + pl.Image
		done[key] = true
		st := result.Step{Name: pullPrefix + pl.Image, Within: within, End: last, Status: result.StepDone,
			Seconds: pl.Total.Seconds(), Precision: result.PrecisionMillisecond,
			Details: map[string]string{"image": pl.Image, "container": c}}
		if pl.Present {
			st.Source = "Event Pulled (already present on machine)"
			st.Start, st.Note = last, "already present on machine: nothing pulled"
			st.Precision = result.PrecisionSecond
		} else {
			st.Source = "Event Pulled: the kubelet's pull time and the time including waiting"
			st.Start = last.Add(-pl.Total)
			if t, ok := pulling[key]; ok {
				st.Start = t
				st.Source = "Event Pulling → Event Pulled: the kubelet's pull time and the time including waiting"
			}
			st.Values = map[string]float64{"pull_seconds": pl.Pull.Seconds()}
			if pl.Waited {
				st.Values["waiting_seconds"] = pl.Wait().Seconds()
			} else {
				st.Note = "the kubelet gave no waiting time (before 1.28): seconds is the pull's own"
			}
			if pl.Bytes > 0 {
				st.Values["image_bytes"] = float64(pl.Bytes)
				if bps := pl.BytesPerSecond(); bps > 0 {
					st.Values["bytes_per_second"] = bps
					st.Note = strings.TrimPrefix(st.Note+"; bytes_per_second is the image's size over the pull's time: the size counts the layers the node already held, so the download ran at that rate or slower", "; ")
				}
			}
		}
		if n := eventCount(e); n > 1 {
			st.Note = strings.TrimPrefix(st.Note+fmt.Sprintf("; pulled %d times (restarts with imagePullPolicy Always): the latest is shown", n), "; ")
		}
		out = append(out, pullStep{step: st, fact: pullFact{Pulled: pl, within: within, container: c, node: p.Spec.NodeName, done: last}})
	}
	for k, t := range pulling {
		if done[k] {
			continue
		}
		fp, img, _ := strings.Cut(k, "\x00")
		c, init := containerOf(fp)
		within := StepStart
		if init {
			within = initPrefix + c
		}
		out = append(out, pullStep{step: result.Step{Name: pullPrefix + img, Within: within, Start: t, Status: result.StepPending,
			Source: "Event Pulling (no Pulled Event)", Precision: result.PrecisionSecond, Details: map[string]string{"image": img, "container": c},
			Note: "no Pulled Event: the pull is running, failed (see the start step's Events) or its Event expired"},
			fact: pullFact{within: within, container: c, node: p.Spec.NodeName}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].step.Start.Before(out[j].step.Start) })
	return out
}

// probes reads the readiness and startup probes and the Unhealthy Events: what they alone make the
// readiness step last at least (expected).
func probes(p *corev1.Pod, evs []corev1.Event) probeFacts {
	var best probeFacts
	for i := range evs {
		if evs[i].Reason != "Unhealthy" {
			continue
		}
		switch {
		case strings.HasPrefix(evs[i].Message, "Readiness probe"):
			best.readinessFailures += eventCount(&evs[i])
		case strings.HasPrefix(evs[i].Message, "Startup probe"):
			best.startupFailures += eventCount(&evs[i])
		}
	}
	rf, sf := best.readinessFailures, best.startupFailures
	for _, c := range p.Spec.Containers {
		pf := probeFacts{container: c.Name, readinessFailures: rf, startupFailures: sf}
		if r := c.ReadinessProbe; r != nil {
			pf.hasReadiness = true
			pf.initialDelay = float64(r.InitialDelaySeconds)
			pf.period = float64(orDefault(r.PeriodSeconds, 10))
			pf.successThreshold = float64(orDefault(r.SuccessThreshold, 1))
			// The first probe that counts runs at the first tick after initialDelaySeconds; each failure costs
			// a period, and successThreshold − 1 more successes are needed after the first.
			pf.expected += pf.initialDelay + (float64(rf)+pf.successThreshold-1)*pf.period
		}
		if s := c.StartupProbe; s != nil {
			pf.hasStartup = true
			pf.startupInitialDelay = float64(s.InitialDelaySeconds)
			pf.startupPeriod = float64(orDefault(s.PeriodSeconds, 10))
			pf.expected += pf.startupInitialDelay + float64(sf)*pf.startupPeriod
		}
		if (pf.hasReadiness || pf.hasStartup) && (best.container == "" || pf.expected > best.expected) {
			best = pf
		}
	}
	return best
}

func orDefault(v, d int32) int32 {
	if v <= 0 {
		return d
	}
	return v
}

func (f probeFacts) values() map[string]float64 {
	if f.container == "" && f.readinessFailures == 0 && f.startupFailures == 0 {
		return nil
	}
	v := map[string]float64{"probe_failures": float64(f.readinessFailures)}
	if f.hasReadiness {
		v["initial_delay_seconds"] = f.initialDelay
		v["period_seconds"] = f.period
		v["success_threshold"] = f.successThreshold
	}
	if f.hasStartup || f.startupFailures > 0 {
		v["startup_probe_failures"] = float64(f.startupFailures)
	}
	if f.hasStartup {
		v["startup_initial_delay_seconds"] = f.startupInitialDelay
		v["startup_period_seconds"] = f.startupPeriod
	}
	if f.container != "" {
		v["probe_expected_seconds"] = f.expected
	}
	return v
}

// coverage says how much of the start-up the pod's Events still cover: the apiserver drops an Event
// --event-ttl (1 h by default) after its last update, so the start of an old pod is read from its conditions
// and container statuses alone.
func coverage(p *corev1.Pod, pt result.PodTimeline, evs []corev1.Event, readable bool, now time.Time, ttl time.Duration) result.EventsCoverage {
	c := result.EventsCoverage{Readable: readable, Count: len(evs)}
	if !readable {
		c.Note = "Events were not readable: every step comes from conditions and container statuses"
		for _, s := range pt.Steps {
			if s.Within == "" {
				c.FromConditionsOnly = append(c.FromConditionsOnly, s.Name)
			}
		}
		return c
	}
	for i := range evs {
		if f, _, _ := eventTimes(&evs[i]); !f.IsZero() && (c.Oldest.IsZero() || f.Before(c.Oldest)) {
			c.Oldest = f
		}
	}
	if ttl <= 0 || now.Sub(pt.Created) <= ttl {
		return c
	}
	// The first Event of a start-up comes at scheduling (Scheduled, or FailedScheduling before it); one found
	// only later means the earlier ones expired.
	sched := kube.PodTrueSince(p, corev1.PodScheduled)
	if sched.IsZero() {
		sched = pt.Created
	}
	end := pt.Created.Add(time.Duration(pt.Seconds * float64(time.Second)))
	var lostUntil time.Time
	switch {
	case len(evs) == 0:
		lostUntil = end
	case c.Oldest.After(sched.Add(2 * time.Second)):
		lostUntil = minTime(c.Oldest, end)
	default:
		return c
	}
	c.LostSeconds = seconds(pt.Created, lostUntil)
	for _, s := range pt.Steps {
		if s.Within == "" && s.Status != result.StepNotMeasured && !s.Start.IsZero() && s.Start.Before(lostUntil) {
			c.FromConditionsOnly = append(c.FromConditionsOnly, s.Name)
		}
	}
	if len(evs) == 0 {
		c.Note = fmt.Sprintf("no Event left for a pod %s old (the apiserver's --event-ttl, %s by default): pulls, scheduling failures and probe failures are lost; the steps come from conditions only",
			now.Sub(pt.Created).Round(time.Second), DefaultEventTTL)
	} else {
		c.Note = fmt.Sprintf("the oldest Event left is %s after the pod's creation: %s of the start-up lost its Events (expired after the apiserver's --event-ttl)",
			c.Oldest.Sub(pt.Created).Round(time.Second), time.Duration(c.LostSeconds*float64(time.Second)).Round(time.Second))
	}
	return c
}

func minTime(a, b time.Time) time.Time {
	if b.IsZero() || !a.IsZero() && a.Before(b) {
		return a
	}
	return b
}

// startedAt is when a container (running, or terminated since) started; zero when it has not.
func startedAt(cs corev1.ContainerStatus) time.Time {
	switch {
	case cs.State.Running != nil:
		return cs.State.Running.StartedAt.Time
	case cs.State.Terminated != nil:
		return cs.State.Terminated.StartedAt.Time
	}
	return time.Time{}
}
