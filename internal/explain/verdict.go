package explain

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Verdict IDs. Each verdict names the phase it explains and rests on the numbers in its evidence.
const (
	IDScheduling = "KS-EXPLAIN-SCHEDULING"
	IDSandbox    = "KS-EXPLAIN-SANDBOX"
	IDPullSerial = "KS-EXPLAIN-PULL-SERIAL"
	IDPullSlow   = "KS-EXPLAIN-PULL-SLOW"
	IDPull       = "KS-EXPLAIN-PULL"
	IDPullFailed = "KS-EXPLAIN-PULL-FAILED"
	IDInit       = "KS-EXPLAIN-INIT"
	IDOOM        = "KS-EXPLAIN-OOM"
	IDCrashLoop  = "KS-EXPLAIN-CRASHLOOP"
	IDProbe      = "KS-EXPLAIN-PROBE"
	IDPhase      = "KS-EXPLAIN-PHASE"
	IDNode       = "KS-EXPLAIN-NODE"
	IDCreate     = "KS-EXPLAIN-CREATE"
	IDDNS        = "KS-EXPLAIN-DNS"
)

// Thresholds (docs/explain.md lists them with their sources).
const (
	// MinPhaseSeconds: a phase shorter than this is not explained — most steps rest on whole-second timestamps.
	MinPhaseSeconds = 1.0
	// MinLongestSeconds: the longest step is named with no more precise cause only from this long: a step
	// between two whole-second timestamps can read up to 1 s long when it took next to nothing.
	MinLongestSeconds = 2.0
	// SLOSeconds: a phase of the pod start-up SLO's whole budget (p99 5 s, SIG Scalability) makes a warning.
	SLOSeconds = 5.0
	// SerialWaitRatio: a pull that waited at least this many times its own pull time (and MinPhaseSeconds)
	// spent most of its time queued for the node's puller.
	SerialWaitRatio = 2.0
	// SlowRegistryBytesPerSecond: a pull of MinSlowPullSeconds or more below this rate (5 MB/s, 40 Mbit/s).
	SlowRegistryBytesPerSecond = 5e6
	MinSlowPullSeconds         = 2.0
	// DominantShare: a pull or an init container's own run holding this share of its phase is its cause.
	DominantShare = 0.5
	// NodeRatio and NodeExcessSeconds: a node's median of a phase above NodeRatio × the other nodes' median
	// and at least NodeExcessSeconds more (KS-POD-NODE's outlier rule).
	NodeRatio         = 2.0
	NodeExcessSeconds = 1.0
)

// cause is one verdict about one pod (or the workload) and the phase whose time it explains.
type cause struct {
	f       result.Finding
	phase   string
	pod     string
	node    string // a slow node's verdict: the node
	seconds float64
}

func severityFor(sec float64) result.Severity {
	if sec >= SLOSeconds {
		return result.SeverityWarning
	}
	return result.SeverityInfo
}

func ev(name string, v float64, unit, pod, step string) result.Evidence {
	l := map[string]string{}
	if pod != "" {
		l["pod"] = pod
	}
	if step != "" {
		l["step"] = step
	}
	return result.Evidence{Name: name, Value: v, Unit: unit, Labels: l}
}

func secs(v float64) string { return result.FormatQuantity(v, "seconds") }

func bytesStr(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.1f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

// phaseMeaning says what holds a pod in each phase when nothing more precise is known.
func phaseMeaning(phase string) (string, string) {
	switch {
	case phase == StepScheduling:
		return "the scheduler took that long to bind the pod with no FailedScheduling Event left: a busy scheduler (its --kube-api-qps, pending pods) or Events that expired",
			"Measure the scheduler under load (`kubeslow bench pods`, KS-POD-PHASE on schedule) and look at its client rate limit and the pending pods."
	case phase == StepSandbox:
		return "the kubelet, the container runtime and the CNI took that long to make the pod's sandbox and network with no failure Event",
			"Look at the node's CNI (IP allocation) and runtime latency (`kubeslow run`: nodes.kubelet, KS-NODE-RUNTIME-OUTLIER)."
	case strings.HasPrefix(phase, initPrefix):
		return "the init container took that long between the previous step and its exit",
			"Read the init container's log for what it waits on."
	case phase == StepStart:
		return "the containers took that long to start after the sandbox (and init containers): image pulls, the runtime, volumes",
			"Look at the pulls and the node's runtime (`kubeslow run`: nodes.kubelet)."
	case phase == StepReadiness:
		return "the containers ran that long before the pod was Ready with no probe explaining it",
			"Look at the app's start-up: what it waits for before it answers its readiness probe."
	}
	return "", ""
}

// podCauses are the verdicts on one pod, the longest phase's first.
func podCauses(pt result.PodTimeline, f podFacts) []cause {
	var out []cause
	phaseSec := map[string]float64{}
	explained := map[string]bool{}
	add := func(c cause) {
		out = append(out, c)
		explained[c.phase] = true
	}
	for _, s := range pt.Steps {
		if s.Within != "" || s.Name == StepEndpoints || s.Name == StepDNS {
			continue
		}
		phaseSec[s.Name] = s.Seconds
		switch {
		case s.Name == StepScheduling:
			if c, ok := schedulingCause(pt.Name, s); ok {
				add(c)
			}
		case s.Name == StepSandbox:
			if c, ok := sandboxCause(pt.Name, s); ok {
				add(c)
			}
		case s.Name == StepStart:
			if c, ok := pullFailedCause(pt.Name, s); ok {
				add(c)
			}
		case s.Name == StepReadiness:
			if c, ok := probeCause(pt.Name, s, f.probe); ok {
				add(c)
			}
		}
	}
	// Pulls, within their phase.
	for _, s := range pt.Steps {
		if !strings.HasPrefix(s.Name, pullPrefix) || s.Status != result.StepDone {
			continue
		}
		if c, ok := pullCause(pt.Name, s, phaseSec[s.Within]); ok && !explained[s.Within] {
			add(c)
		}
	}
	for _, s := range pt.Steps {
		if strings.HasPrefix(s.Name, initPrefix) && !explained[s.Name] {
			if c, ok := initCause(pt.Name, s); ok {
				add(c)
			}
		}
	}
	if len(f.oom) > 0 {
		add(oomCause(pt, f))
	} else if c, ok := crashCause(pt, f); ok {
		add(c)
	}
	// The longest phase, when nothing above explains it.
	longest, lsec := "", 0.0
	for _, s := range pt.Steps {
		if s.Within == "" && s.Name != StepEndpoints && s.Name != StepDNS && s.Seconds > lsec {
			longest, lsec = s.Name, s.Seconds
		}
	}
	if longest != "" && lsec >= MinLongestSeconds && !explained[longest] {
		out = append(out, phaseCause(pt, longest, lsec))
	}
	for i := range out {
		out[i].seconds = phaseSec[out[i].phase]
		out[i].pod = pt.Name
	}
	sortCauses(out)
	return out
}

func sortCauses(cs []cause) {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].seconds != cs[j].seconds {
			return cs[i].seconds > cs[j].seconds
		}
		return cs[i].f.ID < cs[j].f.ID
	})
}

func countOf(evs []result.StepEvent, reason string) (n int, first, last time.Time, msg string) {
	for _, e := range evs {
		if e.Reason != reason {
			continue
		}
		n += e.Count
		if first.IsZero() || e.First.Before(first) {
			first = e.First
		}
		if e.Last.After(last) || msg == "" {
			last, msg = e.Last, e.Message
		}
	}
	return n, first, last, msg
}

func schedulingCause(pod string, s result.Step) (cause, bool) {
	n, first, last, msg := countOf(s.Events, "FailedScheduling")
	if n == 0 {
		return cause{}, false
	}
	detail := podstartup.SchedulingDetail(msg)
	sum := fmt.Sprintf("%s waited %s for a node: %d FailedScheduling Event(s) from %s to %s, mostly %s: %q", pod, secs(s.Seconds), n,
		first.UTC().Format(time.TimeOnly), last.UTC().Format(time.TimeOnly), detail, msg)
	if nn := s.Details["nominated_node"]; nn != "" {
		sum += "; preemption nominated node " + nn + " (lower-priority pods were evicted to make room)"
	} else if _, after, ok := strings.Cut(msg, "preemption:"); ok {
		sum += "; preemption could not help:" + strings.TrimSuffix(after, ".")
	}
	return cause{phase: StepScheduling, f: result.Finding{
		ID: IDScheduling, Severity: severityFor(s.Seconds), Title: "The scheduler found no node for the pod: " + detail,
		Summary:     sum,
		Evidence:    []result.Evidence{ev("scheduling_seconds", s.Seconds, "seconds", pod, s.Name), ev("failed_scheduling_events", float64(n), "count", pod, s.Name)},
		Threshold:   result.Threshold{Op: ">=", Value: 1, Unit: "count", Source: "the scheduler's FailedScheduling Event: each is an attempt that found no node, its message says why per node"},
		Remediation: podstartup.FixOf(podstartup.EventClass{Class: podstartup.ClassScheduling, Detail: detail}),
	}}, true
}

func sandboxCause(pod string, s result.Step) (cause, bool) {
	if len(s.Events) == 0 {
		return cause{}, false
	}
	n, msg, reason := 0, "", ""
	for _, e := range s.Events {
		n += e.Count
		msg, reason = e.Message, e.Reason
	}
	detail := s.Details["reason"]
	fix := podstartup.FixOf(podstartup.EventClass{Class: podstartup.ClassSandbox, Detail: detail})
	switch {
	case detail == "IPAM":
		fix = "the CNI could not allocate the pod an IP: check its IPAM (free addresses in the node's range or pool, Calico block affinity, cloud ENI/prefix limits) and IPs leaked by deleted pods; kubeslow run's KS-CNI-IPAM looks for the 409 storm of contended IPAM"
	case reason == "FailedMount" || reason == "FailedAttachVolume":
		fix = podstartup.FixOf(podstartup.EventClass{Class: podstartup.ClassMount})
	}
	return cause{phase: StepSandbox, f: result.Finding{
		ID: IDSandbox, Severity: severityFor(s.Seconds), Title: "The pod's sandbox or network failed before it came up: " + firstNonEmpty(detail, reason),
		Summary:     fmt.Sprintf("%s's sandbox took %s with %d failure Event(s) (%s): %q", pod, secs(s.Seconds), n, reason, msg),
		Evidence:    []result.Evidence{ev("sandbox_seconds", s.Seconds, "seconds", pod, s.Name), ev("sandbox_failure_events", float64(n), "count", pod, s.Name)},
		Threshold:   result.Threshold{Op: ">=", Value: 1, Unit: "count", Source: "the kubelet's FailedCreatePodSandBox / FailedMount Events: each failed attempt is retried with back-off"},
		Remediation: fix,
	}}, true
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func pullFailedCause(pod string, s result.Step) (cause, bool) {
	n, msg := 0, ""
	for _, e := range s.Events {
		if c, ok := podstartup.ClassifyEvent(e.Reason, e.Message); ok && c.Class == podstartup.ClassImagePull {
			n += e.Count
			msg = e.Message
		}
	}
	if n == 0 {
		return cause{}, false
	}
	return cause{phase: StepStart, f: result.Finding{
		ID: IDPullFailed, Severity: result.SeverityWarning, Title: "Image pulls failed and were retried with back-off",
		Summary:     fmt.Sprintf("%s's containers took %s to start: %d failed pull Event(s): %q", pod, secs(s.Seconds), n, msg),
		Evidence:    []result.Evidence{ev("start_seconds", s.Seconds, "seconds", pod, s.Name), ev("pull_failure_events", float64(n), "count", pod, s.Name)},
		Threshold:   result.Threshold{Op: ">=", Value: 1, Unit: "count", Source: "the kubelet's Failed / BackOff Events about an image: each failed pull backs off (10 s doubling to 5 min)"},
		Remediation: podstartup.FixOf(podstartup.EventClass{Class: podstartup.ClassImagePull}),
	}}, true
}

func pullCause(pod string, s result.Step, phaseSeconds float64) (cause, bool) {
	pull, wait, bytes, bps := s.Values["pull_seconds"], s.Values["waiting_seconds"], s.Values["image_bytes"], s.Values["bytes_per_second"]
	img := s.Details["image"]
	if s.Seconds < MinPhaseSeconds {
		return cause{}, false
	}
	base := []result.Evidence{ev("pull_seconds_including_waiting", s.Seconds, "seconds", pod, s.Name), ev("pull_seconds", pull, "seconds", pod, s.Name),
		ev("waiting_seconds", wait, "seconds", pod, s.Name), ev(s.Within+"_seconds", phaseSeconds, "seconds", pod, s.Within)}
	if ratio := wait / math.Max(pull, 0.001); wait >= MinPhaseSeconds && ratio >= SerialWaitRatio {
		return cause{phase: s.Within, f: result.Finding{
			ID: IDPullSerial, Severity: severityFor(s.Seconds), Title: "An image pull waited behind other pulls on the node (serialized pulls)",
			Summary: fmt.Sprintf("%s's pull of %s took %s, of which it waited %s for the node's puller and pulled for %s (%sx): the kubelet pulls one image at a time (serializeImagePulls: true, the default) or maxParallelImagePulls were busy",
				pod, img, secs(s.Seconds), secs(wait), secs(pull), result.FormatValue(ratio)),
			Evidence: append(base, ev("wait_to_pull_ratio", ratio, "ratio", pod, s.Name)),
			Threshold: result.Threshold{Op: ">=", Value: SerialWaitRatio, Unit: "ratio", Source: "the kubelet's Pulled Event (\"in P (T including waiting)\", 1.28+): T−P is the time the pull queued for the node's puller; " +
				"kubeslow's threshold: a wait of twice the pull itself (and 1 s or more) means the pull spent most of its time queued"},
			Remediation: "Let the kubelet pull in parallel: serializeImagePulls: false with maxParallelImagePulls (e.g. 5); preload large images (the node image, " +
				"a pre-pull DaemonSet) or serve them from a mirror near the nodes so the pull ahead is short (kubeslow run: KS-NODE-PULL-QUEUE names the pull ahead).",
		}}, true
	}
	if share := s.Seconds / math.Max(phaseSeconds, 0.001); share < DominantShare {
		return cause{}, false
	}
	if bps > 0 && bps < SlowRegistryBytesPerSecond && pull >= MinSlowPullSeconds {
		return cause{phase: s.Within, f: result.Finding{
			ID: IDPullSlow, Severity: severityFor(s.Seconds), Title: "A slow registry: the image came down slowly",
			Summary: fmt.Sprintf("%s's pull of %s (%s) took %s: at most %s/s (the image's size over the pull's time, an upper bound: layers the node already held count in the size)",
				pod, img, bytesStr(bytes), secs(pull), bytesStr(bps)),
			Evidence: append(base, ev("image_bytes", bytes, "bytes", pod, s.Name), ev("bytes_per_second", bps, "bytes_per_second", pod, s.Name)),
			Threshold: result.Threshold{Op: "<", Value: SlowRegistryBytesPerSecond, Unit: "bytes_per_second", Source: "the kubelet's Pulled Event (image size / pull time); " +
				"kubeslow's threshold: 5 MB/s (40 Mbit/s), far below what a registry in the nodes' region or a mirror serves, for a pull of 2 s or more"},
			Remediation: "Serve the image from a registry mirror or pull-through cache near the nodes, check the nodes' egress (NAT gateway, proxy) and the registry's rate limits, make the image smaller, or preload it.",
		}}, true
	}
	sum := fmt.Sprintf("%s's pull of %s took %s of the %s step's %s", pod, img, secs(s.Seconds), s.Within, secs(phaseSeconds))
	evs := base
	if bytes > 0 && bps > 0 {
		sum += fmt.Sprintf(" (%s: at most %s/s)", bytesStr(bytes), bytesStr(bps))
		evs = append(evs, ev("image_bytes", bytes, "bytes", pod, s.Name))
	} else if bytes > 0 {
		sum += fmt.Sprintf(" (%s)", bytesStr(bytes))
		evs = append(evs, ev("image_bytes", bytes, "bytes", pod, s.Name))
	}
	return cause{phase: s.Within, f: result.Finding{
		ID: IDPull, Severity: severityFor(s.Seconds), Title: "An image pull holds the start-up",
		Summary: sum, Evidence: evs,
		Threshold:   result.Threshold{Op: ">=", Value: DominantShare, Unit: "ratio", Source: "the kubelet's Pulling and Pulled Events; kubeslow: a pull holding half its step or more is the step's cause"},
		Remediation: "Make the image smaller, preload it on the nodes (the node image or a pre-pull DaemonSet), or use imagePullPolicy IfNotPresent with a pinned tag so a node pulls it once.",
	}}, true
}

func initCause(pod string, s result.Step) (cause, bool) {
	run := s.Values["run_seconds"]
	if s.Status != result.StepDone || s.Seconds < MinPhaseSeconds || run < DominantShare*s.Seconds || run < MinPhaseSeconds {
		return cause{}, false
	}
	name := strings.TrimPrefix(s.Name, initPrefix)
	sum := fmt.Sprintf("%s's init container %s ran %s (of the step's %s)", pod, name, secs(run), secs(s.Seconds))
	evs := []result.Evidence{ev("init_run_seconds", run, "seconds", pod, s.Name), ev("init_step_seconds", s.Seconds, "seconds", pod, s.Name)}
	fix := "Read the init container's log for what it does or waits on (a dependency, a migration, a download) and shorten it, or move the wait into the app's readiness."
	if lim, ok := s.Values["cpu_limit_cores"]; ok {
		sum += fmt.Sprintf(", CPU-limited to %s cores: if it computes, CFS throttling stretches it", result.FormatValue(lim))
		evs = append(evs, ev("cpu_limit_cores", lim, "cores", pod, s.Name))
		fix += " It has a CPU limit: if it computes, raise or remove the limit for the init container (kubeslow run: pods.resources measures the throttling)."
	} else {
		sum += ", with no CPU limit"
	}
	return cause{phase: s.Name, f: result.Finding{
		ID: IDInit, Severity: severityFor(s.Seconds), Title: "An init container ran long",
		Summary: sum, Evidence: evs,
		Threshold:   result.Threshold{Op: ">=", Value: DominantShare, Unit: "ratio", Source: "initContainerStatuses[].state.terminated startedAt/finishedAt (1 s): the init container's own run; kubeslow: its run holding half its step or more is the step's cause"},
		Remediation: fix,
	}}, true
}

func oomCause(pt result.PodTimeline, f podFacts) cause {
	phase := StepStart
	for _, s := range pt.Steps {
		if strings.HasPrefix(s.Name, initPrefix) && s.Details["last_state_reason"] == "OOMKilled" {
			phase = s.Name
		}
	}
	return cause{phase: phase, f: result.Finding{
		ID: IDOOM, Severity: result.SeverityWarning, Title: "A container was OOM-killed and restarted",
		Summary: fmt.Sprintf("%s: container(s) %s were OOM-killed (lastState.terminated.reason OOMKilled), %d restart(s) in all: each restart waits the kubelet's back-off (10 s doubling to 5 min)",
			pt.Name, strings.Join(f.oom, ", "), pt.Restarts),
		Evidence:    []result.Evidence{ev("restarts", float64(pt.Restarts), "count", pt.Name, phase), ev("oom_killed_containers", float64(len(f.oom)), "count", pt.Name, phase)},
		Threshold:   result.Threshold{Op: ">=", Value: 1, Unit: "count", Source: "containerStatuses[].lastState.terminated.reason OOMKilled: the kernel killed the container at its memory limit"},
		Remediation: "Raise the container's memory limit above its start-up peak (kubeslow run: pods.resources reads the peak), or lower what the app holds at start (heap size, caches).",
	}}
}

func crashCause(pt result.PodTimeline, f podFacts) (cause, bool) {
	if pt.Restarts == 0 && f.backOffs == 0 {
		return cause{}, false
	}
	return cause{phase: StepStart, f: result.Finding{
		ID: IDCrashLoop, Severity: result.SeverityWarning, Title: "Containers crashed and the kubelet backed off (CrashLoopBackOff)",
		Summary: fmt.Sprintf("%s: %d restart(s), %d back-off Event(s): the kubelet waits 10 s, doubling to 5 min, before each restart, and the start step runs to the latest start",
			pt.Name, pt.Restarts, f.backOffs),
		Evidence:    []result.Evidence{ev("restarts", float64(pt.Restarts), "count", pt.Name, StepStart), ev("back_off_events", float64(f.backOffs), "count", pt.Name, StepStart)},
		Threshold:   result.Threshold{Op: ">=", Value: 1, Unit: "count", Source: "containerStatuses[].restartCount and the kubelet's BackOff Events (\"Back-off restarting failed container\")"},
		Remediation: podstartup.FixOf(podstartup.EventClass{Class: podstartup.ClassCrashLoop}),
	}}, true
}

// probeCause: the readiness step is what the probe's settings allow at the soonest, give or take a period
// (the probe's tick) and a second (whole-second timestamps).
func probeCause(pod string, s result.Step, p probeFacts) (cause, bool) {
	if s.Status != result.StepDone || s.Seconds < MinPhaseSeconds || p.container == "" || p.expected < MinPhaseSeconds {
		return cause{}, false
	}
	slack := math.Max(p.period, p.startupPeriod) + 1
	if p.expected < DominantShare*s.Seconds || math.Abs(s.Seconds-p.expected) > slack {
		return cause{}, false
	}
	var parts []string
	if p.hasStartup {
		parts = append(parts, fmt.Sprintf("startupProbe initialDelaySeconds %s + %d failure(s) × periodSeconds %s", result.FormatValue(p.startupInitialDelay), p.startupFailures, result.FormatValue(p.startupPeriod)))
	}
	if p.hasReadiness {
		x := fmt.Sprintf("readinessProbe initialDelaySeconds %s + %d failure(s) × periodSeconds %s", result.FormatValue(p.initialDelay), p.readinessFailures, result.FormatValue(p.period))
		if p.successThreshold > 1 {
			x += fmt.Sprintf(" + %s more success(es) × periodSeconds", result.FormatValue(p.successThreshold-1))
		}
		parts = append(parts, x)
	}
	fix := "Lower initialDelaySeconds to the app's real start-up time (or set it to 0 and add a startupProbe with a short periodSeconds): the kubelet runs no readiness probe before it."
	title := "The readiness probe could not pass sooner: its initial delay"
	if float64(p.readinessFailures)*p.period+float64(p.startupFailures)*p.startupPeriod > p.initialDelay+p.startupInitialDelay {
		title = "The readiness probe failed until the app was ready"
		fix = "The app answered its probe only after the failures counted: find what it waits for at start (dependencies, warm-up, its CPU limit); a shorter periodSeconds sees the first success sooner."
	}
	return cause{phase: StepReadiness, f: result.Finding{
		ID: IDProbe, Severity: severityFor(s.Seconds), Title: title,
		Summary: fmt.Sprintf("%s became Ready %s after its containers started; container %s's %s = %s: the probes allow no sooner",
			pod, secs(s.Seconds), p.container, strings.Join(parts, ", "), secs(p.expected)),
		Evidence: []result.Evidence{ev("readiness_seconds", s.Seconds, "seconds", pod, s.Name), ev("probe_expected_seconds", p.expected, "seconds", pod, s.Name),
			ev("initial_delay_seconds", p.initialDelay, "seconds", pod, s.Name), ev("probe_failures", float64(p.readinessFailures), "count", pod, s.Name),
			ev("period_seconds", p.period, "seconds", pod, s.Name)},
		Threshold: result.Threshold{Op: ">=", Value: DominantShare, Unit: "ratio", Source: "the kubelet's prober: no readiness probe before initialDelaySeconds after the container starts, then one each periodSeconds, " +
			"each failure an Unhealthy Event; kubeslow: the probes' soonest time is half the step or more and within a period + 1 s of it"},
		Remediation: fix,
	}}, true
}

func schedulingHint(s result.Step) string {
	if n, _, _, _ := countOf(s.Events, "Unhealthy"); n > 0 {
		return fmt.Sprintf(" (%d Unhealthy Event(s))", n)
	}
	return ""
}

func phaseCause(pt result.PodTimeline, phase string, sec float64) cause {
	meaning, fix := phaseMeaning(phase)
	var st result.Step
	for _, s := range pt.Steps {
		if s.Name == phase {
			st = s
		}
	}
	status := ""
	if st.Status == result.StepPending {
		status = " and has not finished"
	}
	return cause{phase: phase, f: result.Finding{
		ID: IDPhase, Severity: severityFor(sec), Title: "The longest step: " + phase,
		Summary:     fmt.Sprintf("%s spent %s in %s%s%s: %s", pt.Name, secs(sec), phase, status, schedulingHint(st), meaning),
		Evidence:    []result.Evidence{ev(phase+"_seconds", sec, "seconds", pt.Name, phase), ev("pod_seconds", pt.Seconds, "seconds", pt.Name, "")},
		Threshold:   result.Threshold{Op: ">=", Value: MinLongestSeconds, Unit: "seconds", Source: "kubeslow: the longest step, of 2 s or more (a step between two whole-second timestamps can read 1 s when it took next to nothing), with no more precise cause found"},
		Remediation: fix,
	}}
}
