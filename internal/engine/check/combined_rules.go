package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the combined rules read, of the measurements that declare them.
var (
	apiLatencySingle = rule.Metric{Result: apislo.Name, Name: apislo.MetricLatencyP99Single}
	apiConflicts     = rule.Metric{Result: apislo.Name, Name: apislo.MetricConflictsPerMinute}
	podsSLIP99       = rule.Metric{Result: podstartup.Name, Name: podstartup.MetricSLIP99}
	podsTailShare    = rule.Metric{Result: podstartup.Name, Name: podstartup.MetricTailPhaseShare}
	podsTailMean     = rule.Metric{Result: podstartup.Name, Name: podstartup.MetricTailPhaseMean}
	podsNodeRatio    = rule.Metric{Result: podstartup.Name, Name: podstartup.MetricNodeSLIRatio}
	podsNodeP50      = rule.Metric{Result: podstartup.Name, Name: podstartup.MetricNodeSLIP50}
)

// ipamResources are the API resources CNI plugins keep their IP allocation in (Calico's IPAM blocks,
// affinities and handles; Whereabouts' IP pools). A 409 storm on them and a slow sandbox phase together
// are case E.
var ipamResources = []string{"ipamblocks", "blockaffinities", "ipamhandles", "ippools", "ipamconfigs"}

func isIPAMResource(r string) bool {
	for _, x := range ipamResources {
		if r == x {
			return true
		}
	}
	return strings.Contains(r, "ipam")
}

// CombinedRules read several measurements at once and name a cause none of them names alone.
func CombinedRules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-CNI-IPAM", Title: "CNI IP allocation contention slows pod start-up", Severity: result.SeverityError, Cases: []string{"E"},
		When:  rule.Condition{Metric: apiConflicts, Op: ">", Value: 60, Unit: "per_minute"},
		Reads: []rule.Metric{podsTailShare, podsTailMean, podsNodeRatio},
		Needs: []string{podstartup.Name},
		Source: "case E (Calico IPAM): 409 Conflicts above one per second on an IPAM resource while the pod sandbox phase " +
			"(where the CNI allocates the IP) holds the slow start-ups (KS-POD-PHASE or KS-POD-NODE on sandbox)",
		Summary: "{{.value}} 409 Conflicts on {{.resource}} while pods wait {{.sandbox}} in the sandbox phase: CNI plugins race to allocate IPs from shared blocks, retry, and each retry loads the apiserver further",
		Remediation: "Stop the race: serialise IPAM per node (Calico's IPAM lock / strict affinity), give each node its own larger block (Calico blockSize), " +
			"size the control plane for the churn, and reduce pod churn; confirm the writers with `kubeslow audit` on the audit log.",
		Match: cniIPAMMatch,
	}, controlPlaneSaturatedRule(), dnsConntrackRaceRule(), apiTierSaturatedRule()}
}

// SchedDelayMax is the p99 of kube-apiserver's goroutines' wait for a CPU above which it is short of CPU: Linux
// CFS's targeted scheduling latency (sysctl_sched_latency, 6 ms × (1 + log2 CPUs), capped at 24 ms from 8 CPUs
// up; kernel/sched/fair.c) is how long a runnable task waits at most among fair-share neighbours, so a p99
// beyond it means the apiserver's threads are held off the CPU (a CPU limit, or more runnable work than cores).
const SchedDelayMax = 0.024

// The API tier's metrics the managed-control-plane saturation rule reads.
var (
	cpSchedP99   = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricGoSchedP99}
	cpAPICores   = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCPUCores}
	apiAPFWait   = rule.Metric{Result: apislo.Name, Name: apislo.MetricAPFWaitP99}
	apiAPFQueue  = rule.Metric{Result: apislo.Name, Name: apislo.MetricAPFInqueuePeak}
	apiAPFReject = rule.Metric{Result: apislo.Name, Name: apislo.MetricAPFRejectedPerMinute}
	apiReplica   = rule.Metric{Result: apislo.Name, Name: apislo.MetricReplicaStart}
)

// apiTierSaturatedRule is KS-CP-SATURATED where the cores are out of reach (a managed control plane, or one
// outside every node): kube-apiserver's own /metrics say it is short of CPU — its goroutines wait for a CPU
// beyond what the kernel's scheduler targets — while the API is over its latency SLO (or the apiserver left
// half its scrapes unanswered). Its numbers: the wait, the API latency, APF queueing and rejections, the cores
// its own process_cpu_seconds_total counts, and which replica answered. Where the cores are known,
// KS-CP-SATURATED says it with them and this finding folds under it.
func apiTierSaturatedRule() rule.Rule {
	return rule.Rule{
		ID: "KS-CP-SATURATED-API", Title: "kube-apiserver is short of CPU (from the API tier)", Severity: result.SeverityError, Cases: []string{"E"},
		When:  rule.Condition{Metric: cpSchedP99, Op: ">", Value: SchedDelayMax, Unit: "seconds"},
		Also:  []rule.Condition{{Metric: apiLatencySingle, Op: ">", Value: apislo.SLOSingle, Unit: "seconds"}},
		Reads: []rule.Metric{cpAPICores, cpScrapes, cpMissed, apiAPFWait, apiAPFQueue, apiAPFReject, apiReplica, apiConflicts, apiRequests},
		// The node tier's figures of kube-apiserver (apiserverOnNode) add to the evidence where present and are
		// not rule inputs (the fixtures' managed control plane has no node agent).
		// The pod start-up SLO (cpPodsSLO) is read only when the run had that benchmark: not an input.
		Needs: []string{apislo.Name},
		Source: "Linux CFS's targeted scheduling latency (sysctl_sched_latency: at most 24 ms by default, kernel/sched/fair.c) for the p99 of " +
			"kube-apiserver's goroutines' wait for a CPU (go_sched_latencies_seconds), with the API call latency SLO (p99 <= 1 s, SIG Scalability) " +
			"or, when the run had the benchmark, the pod start-up SLO (p99 <= 5 s) breached, or half the apiserver's own /metrics scrapes unanswered; case E's starved master",
		Summary: "kube-apiserver's goroutines waited {{.sched}} (p99) for a CPU while API p99 was {{.api}}{{.pods}}{{.apf}}; it used {{.cpu}} cores by its own count " +
			"({{.replica}}); source: the API tier (the apiserver's /metrics); {{.node}}{{.gaps}}{{.retries}}",
		Remediation: "Give kube-apiserver more CPU: on a managed control plane, a larger tier or a scale-up through the provider (EKS: AWS support; " +
			"AKS: the Standard/Premium tier; GKE: the control plane scales with the load it sees), elsewhere its node or its limit; and take load off " +
			"it: `kubeslow audit` on the audit log names the heaviest clients, APF's queueing names their priority level.",
		SameCause: []string{"KS-CP-SATURATED"},
		Match:     apiTierSaturatedMatch,
	}
}

func apiTierSaturatedMatch(r *result.Report, rl rule.Rule) []rule.Hit {
	sched := cpSchedP99.In(r, map[string]string{"component": cpusage.APIServer})
	if sched == nil || !rl.When.Holds(sched.Value) {
		return nil
	}
	h := rule.Hit{Value: sched.Value, Vars: map[string]string{}, Evidence: []result.Evidence{cpSchedP99.Evidence(*sched)}}
	h.Vars["sched"] = result.FormatQuantity(sched.Value, "seconds")
	var apiEv *result.Metric
	for _, m := range apiLatencySingle.Samples(r) {
		if apiEv == nil || m.Value > apiEv.Value {
			apiEv = &m
		}
	}
	silent, attempted, missed := unanswered(r)
	var podsEv *result.Metric
	if p := podsSLIP99.In(r, nil); p != nil && r.Result(podstartup.Name).Status.Measured() && cpPodsSLO.Holds(p.Value) {
		podsEv = p
	}
	apiBreached := apiEv != nil && rl.AlsoOn(apiLatencySingle).Holds(apiEv.Value)
	if !apiBreached && !silent && podsEv == nil {
		return nil // short of CPU but within the SLOs: not a finding
	}
	switch {
	case apiEv != nil:
		h.Vars["api"] = result.FormatQuantity(apiEv.Value, "seconds") + " (" + apiEv.Labels["verb"] + " " + apiEv.Labels["resource"] + ")"
		h.Evidence = append(h.Evidence, apiLatencySingle.Evidence(*apiEv))
	case silent:
		h.Vars["api"] = fmt.Sprintf("not readable: kube-apiserver did not answer %.0f of its %.0f scrapes of /metrics in the window", missed, attempted)
	default:
		h.Vars["api"] = "not measured"
	}
	h.Vars["pods"] = ""
	if podsEv != nil {
		h.Vars["pods"] = " and pod start-up p99 " + result.FormatQuantity(podsEv.Value, "seconds")
		h.Evidence = append(h.Evidence, podsSLIP99.Evidence(*podsEv))
	}
	h.Vars["apf"] = ""
	var apf []string
	for _, w := range apiAPFWait.Samples(r) {
		if w.Value > 0.1 {
			apf = append(apf, fmt.Sprintf("%s requests queued %s p99 in APF", w.Labels["priority_level"], result.FormatQuantity(w.Value, "seconds")))
			h.Evidence = append(h.Evidence, apiAPFWait.Evidence(w))
		}
	}
	for _, q := range apiAPFQueue.Samples(r) {
		apf = append(apf, fmt.Sprintf("up to %.0f %s requests in APF queues", q.Value, q.Labels["priority_level"]))
		h.Evidence = append(h.Evidence, apiAPFQueue.Evidence(q))
	}
	for _, j := range apiAPFReject.Samples(r) {
		apf = append(apf, fmt.Sprintf("%.0f/min %s requests rejected by APF (%s)", j.Value, j.Labels["priority_level"], j.Labels["reason"]))
		h.Evidence = append(h.Evidence, apiAPFReject.Evidence(j))
	}
	if len(apf) > 0 {
		h.Vars["apf"] = "; " + strings.Join(apf, ", ")
	}
	h.Vars["cpu"] = "?"
	if c := cpAPICores.In(r, map[string]string{"component": cpusage.APIServer}); c != nil {
		h.Vars["cpu"] = fmt.Sprintf("%.2f", c.Value)
		h.Evidence = append(h.Evidence, cpAPICores.Evidence(*c))
	}
	h.Vars["replica"] = "replica unknown"
	first, last := apiReplica.In(r, map[string]string{"scrape": "first"}), apiReplica.In(r, map[string]string{"scrape": "last"})
	switch {
	case first != nil && last != nil && first.Value == last.Value:
		h.Vars["replica"] = "one replica answered, started " + time.Unix(int64(last.Value), 0).UTC().Format(time.RFC3339)
	case first != nil && last != nil:
		h.Vars["replica"] = "two replicas answered, started " + time.Unix(int64(first.Value), 0).UTC().Format(time.RFC3339) + " and " +
			time.Unix(int64(last.Value), 0).UTC().Format(time.RFC3339)
	}
	h.Vars["node"] = "the cores it has are out of reach"
	if says, ev := apiserverOnNode(r); says != "" {
		h.Vars["node"] = says
		h.Evidence = append(h.Evidence, ev...)
	}
	h.Vars["gaps"] = ""
	if a, m := cpScrapes.In(r, map[string]string{"component": cpusage.APIServer}), cpMissed.In(r, map[string]string{"component": cpusage.APIServer}); a != nil && m != nil && m.Value > 0 {
		h.Evidence = append(h.Evidence, cpScrapes.Evidence(*a), cpMissed.Evidence(*m))
		if !silent {
			h.Vars["gaps"] = fmt.Sprintf("; it did not answer %.0f of its %.0f scrapes in the window", m.Value, a.Value)
		}
	}
	h.Vars["retries"] = ""
	if share := conflictShare(r); share >= retryFeedback {
		h.Vars["retries"] = fmt.Sprintf("; 409 Conflict retries are %.0f%% of the API requests, each one more load on the starved apiserver", share*100)
		h.Evidence = append(h.Evidence, result.Evidence{Name: "conflict_share", Value: share, Unit: "ratio", Result: apislo.Name})
	}
	return []rule.Hit{h}
}

// The metrics the control-plane saturation rule reads.
var (
	cpSaturation = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCPUSaturation}
	cpBusiest    = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCPUCoresBusiest}
	cpCores      = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCoresAvailable}
	cpThrottled  = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCgroupThrottledRatio}
	cpThrottledW = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCgroupThrottledWindowShare}
	cpScrapes    = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricScrapesAttempted}
	cpMissed     = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricScrapesMissed}
	// cpPressure is node_exporter's PSI of the control-plane hosts, read from a Prometheus only: it adds to
	// the evidence where present and is not a rule input (a live run has no node_exporter to ask).
	cpPressure    = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricCPUPressure}
	apiRequests   = rule.Metric{Result: apislo.Name, Name: apislo.MetricRequestsPerSecond}
	retryFeedback = 0.1 // 409 retries at least this share of the API requests make the feedback loop worth naming
	// cpPodsSLO is KS-CP-SATURATED's alternative condition, read only when pod start-up was measured (a
	// run without the benchmark still has its observation window).
	cpPodsSLO = rule.Condition{Metric: podsSLIP99, Op: ">", Value: podstartup.DefaultSLO.Seconds(), Unit: "seconds"}
)

// controlPlaneSaturatedRule is case E's first answer: kube-apiserver and etcd use the cores they have while
// the API or pod start-up is over its SLO. Busy but within the SLOs is not a finding.
func controlPlaneSaturatedRule() rule.Rule {
	return rule.Rule{
		ID: "KS-CP-SATURATED", Title: "The control plane is out of CPU", Severity: result.SeverityError, Cases: []string{"E"},
		When: rule.Condition{Metric: cpSaturation, Op: ">=", Value: cpusage.SaturationThreshold, Unit: "ratio"},
		// The API SLO, or the pod start-up SLO when the run had that benchmark (cpPodsSLO: the rule is
		// evaluated without it), breached makes the saturation a cause.
		Also:  []rule.Condition{{Metric: apiLatencySingle, Op: ">", Value: apislo.SLOSingle, Unit: "seconds"}},
		Reads: []rule.Metric{cpBusiest, cpCores, cpThrottled, cpThrottledW, cpScrapes, cpMissed, apiConflicts, apiRequests},
		Needs: []string{apislo.Name},
		Source: "case E: a 2-core control plane at 100% CPU left API p99 far over 5 s (4 cores mostly fixed it, 16 fully); " +
			"90% of the cores in the busiest 6 s — by the processes' own CPU count or the kernel's count of their cgroup, whichever is higher " +
			"(a starved process under-reports), or throttled in 90% of the window's CFS periods — while the API call latency SLO " +
			"(p99 <= 1 s) or the pod start-up SLO (p99 <= 5 s) is breached, or, where the API's latency is not known, the apiserver " +
			"left half its own /metrics scrapes unanswered (a scrape times out after 10 s by Prometheus's default); where the node agent runs " +
			"on the control-plane nodes, the saturation is also each component's CPU against its own cores (its cgroup's limit, its cpuset or " +
			"its node's cores), or the share of its runnable time its threads waited on a run queue where that wait came to at least 0.1 s per second " +
			"(/proc/<pid>/schedstat; the USE method's " +
			"saturation, Coroot's CPU delay: at 90% it got a tenth of the CPU it was ready to use), whichever is higher, named by component",
		Summary: "kube-apiserver and etcd used {{.used}} of {{.cores}} cores{{.throttled}}{{.component}} while API p99 was {{.api}} and pod start-up p99 {{.pods}}{{.gaps}}{{.pressure}}{{.retries}}",
		Remediation: "Give kube-apiserver and etcd more CPU (a larger control plane: case E went from 2 cores, p99 far over 5 s, to 4 mostly and 16 fully fixed) " +
			"or fewer writers (`kubeslow audit` names the heaviest clients); when 409 retries are a large share of the requests, fix the conflicting " +
			"writers first (KS-API-409, KS-CNI-IPAM): every retry is another request to the saturated apiserver, a feedback loop.",
		Match: cpSaturatedMatch,
	}
}

func cpSaturatedMatch(r *result.Report, rl rule.Rule) []rule.Hit {
	var hits []rule.Hit
	sat := rl
	sat.Also = nil // the SLO conditions are alternatives, read below
	for _, h := range sat.Crossing(r) {
		h.Key = ""
		api, pods := 0.0, 0.0
		var apiEv, podsEv *result.Metric
		for _, m := range apiLatencySingle.Samples(r) {
			if apiEv == nil || m.Value > api {
				api, apiEv = m.Value, &m
			}
		}
		if p := podsSLIP99.In(r, nil); p != nil && r.Result(podstartup.Name).Status.Measured() {
			pods, podsEv = p.Value, p
		}
		apiC, podsC := rl.AlsoOn(apiLatencySingle), cpPodsSLO
		silent, attempted, missed := unanswered(r)
		if !(apiEv != nil && apiC.Holds(api)) && !(podsEv != nil && podsC.Holds(pods)) && !silent {
			continue // busy but within the SLOs
		}
		h.Vars["api"], h.Vars["pods"] = "not measured", "not measured"
		if apiEv != nil {
			h.Vars["api"] = result.FormatQuantity(api, "seconds")
			h.Evidence = append(h.Evidence, apiLatencySingle.Evidence(*apiEv))
		} else if silent {
			h.Vars["api"] = fmt.Sprintf("not readable: kube-apiserver did not answer %.0f of its %.0f scrapes of /metrics in the window", missed, attempted)
		}
		if podsEv != nil {
			h.Vars["pods"] = result.FormatQuantity(pods, "seconds")
			h.Evidence = append(h.Evidence, podsSLIP99.Evidence(*podsEv))
		}
		h.Vars["used"], h.Vars["cores"] = "?", "?"
		if b := cpBusiest.In(r, nil); b != nil {
			// Below a core the figure takes two decimals, as a fractional limit does: "used 0.06 of 0.06", not
			// "0.0 of 0.06" (a test cgroup capped at 0.06 core read so).
			prec := 1
			if b.Value < 1 {
				prec = 2
			}
			h.Vars["used"] = fmt.Sprintf("%.*f", prec, b.Value)
			if src := b.Labels["source"]; src != "" && src != cpusage.BasisProcessCPU {
				h.Vars["used"] += " (by the kernel's " + src + ")"
			}
			h.Evidence = append(h.Evidence, cpBusiest.Evidence(*b))
		}
		if c := cpCores.In(r, nil); c != nil {
			h.Vars["cores"] = fmt.Sprintf("%g (%s)", c.Value, c.Labels["source"])
			h.Evidence = append(h.Evidence, cpCores.Evidence(*c))
		}
		// The node tier names the component: its CPU against its own cores or limit, or its run-queue wait.
		h.Vars["component"] = ""
		for _, m := range cpSaturation.Samples(r) {
			if d := m.Labels["detail"]; d != "" {
				h.Vars["component"] = fmt.Sprintf("; the most saturated component, by %s: %s", m.Labels["basis"], d)
			}
		}
		// On the lab the kernel says it too: the share of CFS periods in which their cgroup's quota ran out.
		h.Vars["throttled"] = ""
		if th := cpThrottled.In(r, nil); th != nil {
			h.Vars["throttled"] = fmt.Sprintf(" (their cgroup throttled in %.0f%% of its CFS periods)", th.Value*100)
			h.Evidence = append(h.Evidence, cpThrottled.Evidence(*th))
		}
		if tw := cpThrottledW.In(r, nil); tw != nil {
			h.Evidence = append(h.Evidence, cpThrottledW.Evidence(*tw))
		}
		// A starved component misses its own scrapes: said, since its own CPU count then under-reads.
		h.Vars["gaps"] = ""
		for _, a := range cpScrapes.Samples(r) {
			m := cpMissed.In(r, a.Labels)
			if m == nil || m.Value <= 0 || a.Value <= 0 {
				continue
			}
			h.Evidence = append(h.Evidence, cpScrapes.Evidence(a), cpMissed.Evidence(*m))
			if silent && a.Labels["component"] == cpusage.APIServer {
				continue // said in place of its latency
			}
			h.Vars["gaps"] += fmt.Sprintf("; %s did not answer %.0f of its %.0f scrapes in the window", a.Labels["component"], m.Value, a.Value)
		}
		h.Vars["pressure"] = ""
		for _, p := range cpPressure.Samples(r) {
			if p.Value >= 0.01 {
				h.Vars["pressure"] += fmt.Sprintf("; tasks on %s waited for a CPU %.0f%% of the time (PSI)", p.Labels["instance"], p.Value*100)
				h.Evidence = append(h.Evidence, cpPressure.Evidence(p))
			}
		}
		h.Vars["retries"] = ""
		if share := conflictShare(r); share >= retryFeedback {
			h.Vars["retries"] = fmt.Sprintf("; 409 Conflict retries are %.0f%% of the API requests, each one more load on the saturated apiserver", share*100)
			h.Evidence = append(h.Evidence, result.Evidence{Name: "conflict_share", Value: share, Unit: "ratio", Result: apislo.Name})
		}
		hits = append(hits, h)
	}
	return hits
}

// The node tier's figures of each component (cpusage.AddComponents), read by KS-CP-SATURATED-API to say
// where the starved apiserver's CPU went when its cores are known but short of KS-CP-SATURATED's threshold.
var (
	compCores     = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricComponentCPUCores}
	compWait      = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricComponentSchedWait}
	compWaitShare = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricComponentWaitShare}
	compThrottled = rule.Metric{Result: cpusage.Name, Name: cpusage.MetricComponentThrottled}
)

// apiserverOnNode says what the node agent saw of kube-apiserver on its node, where it ran there: the cores it
// used, its threads' wait on a run queue, whether a CPU limit of its own bounds it (else its neighbours on
// the node took the CPU) and the node's CPU pressure; "" where the node tier did not reach it.
func apiserverOnNode(r *result.Report) (string, []result.Evidence) {
	var says []string
	var ev []result.Evidence
	for _, w := range compWait.Samples(r) {
		if w.Labels["component"] != cpusage.APIServer || w.Labels["source"] != cpnode.SourceNodeAgent {
			continue
		}
		node := w.Labels["node"]
		at := map[string]string{"component": cpusage.APIServer, "node": node}
		s := fmt.Sprintf("the node agent on %s: it", node)
		if c := compCores.In(r, at); c != nil {
			s += fmt.Sprintf(" used %.2f cores and", c.Value)
			ev = append(ev, compCores.Evidence(*c))
		}
		s += fmt.Sprintf(" its threads waited %.2f s per second for a CPU", w.Value)
		ev = append(ev, compWait.Evidence(w))
		if sh := compWaitShare.In(r, at); sh != nil {
			s += fmt.Sprintf(" (%.0f%% of their runnable time)", sh.Value*100)
			ev = append(ev, compWaitShare.Evidence(*sh))
		}
		if th := compThrottled.In(r, at); th != nil {
			s += fmt.Sprintf(", under a CPU limit of its own (throttled in %.0f%% of its CFS periods)", th.Value*100)
			ev = append(ev, compThrottled.Evidence(*th))
		} else {
			s += ", with no CPU limit of its own: its neighbours on the node took the CPU"
		}
		if p := cpPressure.In(r, map[string]string{"instance": node}); p != nil {
			s += fmt.Sprintf("; tasks on %s waited for a CPU %.0f%% of the time (PSI)", node, p.Value*100)
			ev = append(ev, cpPressure.Evidence(*p))
		}
		says = append(says, s)
	}
	return strings.Join(says, "; "), ev
}

// unansweredShare is the share of its own /metrics scrapes the apiserver must have left unanswered for
// KS-CP-SATURATED to take that as its latency SLO breached where its latency is not known: a scrape fails when
// the apiserver does not answer within the scraper's timeout (Prometheus's default is 10 s, ten times the 1 s
// API call latency SLO), so half of them failing is a p99 far over the SLO for that call.
const unansweredShare = 0.5

// unanswered reports whether kube-apiserver left at least unansweredShare of its scrapes unanswered, with the
// counts.
func unanswered(r *result.Report) (bool, float64, float64) {
	comp := map[string]string{"component": cpusage.APIServer}
	a, m := cpScrapes.In(r, comp), cpMissed.In(r, comp)
	if a == nil || m == nil || a.Value <= 0 {
		return false, 0, 0
	}
	return m.Value >= unansweredShare*a.Value, a.Value, m.Value
}

// conflictShare is the share of the apiserver's requests answered 409 Conflict over the window.
func conflictShare(r *result.Report) float64 {
	rps := apiRequests.In(r, nil)
	if rps == nil || rps.Value <= 0 {
		return 0
	}
	perMin := 0.0
	for _, m := range apiConflicts.Samples(r) {
		perMin += m.Value
	}
	return perMin / 60 / rps.Value
}

// sandboxWait is how long pods wait in the sandbox phase when that phase is what makes start-ups slow: the
// tail's mean there when it holds the tail (KS-POD-PHASE's threshold, above the timestamps' precision), or
// the slowest outlier node's median (KS-POD-NODE on sandbox); 0 when neither.
func sandboxWait(r *result.Report) float64 {
	sandbox := 0.0
	phase, node := podstartup.PhaseRule(), podstartup.NodeRule()
	sh, mean := podsTailShare.In(r, map[string]string{"phase": "sandbox"}), podsTailMean.In(r, map[string]string{"phase": "sandbox"})
	if sh != nil && mean != nil && phase.When.Holds(sh.Value) && mean.Value >= podstartup.TimestampPrecision {
		sandbox = mean.Value
	}
	for _, h := range node.Match(r, node) {
		if h.Vars["phase"] != "sandbox" {
			continue
		}
		if p50 := podsNodeP50.In(r, map[string]string{"node": h.Vars["node"]}); p50 != nil && p50.Value > sandbox {
			sandbox = p50.Value
		}
	}
	return sandbox
}

func cniIPAMMatch(r *result.Report, rl rule.Rule) []rule.Hit {
	sandbox := sandboxWait(r)
	if sandbox == 0 {
		return nil
	}
	var hits []rule.Hit
	for _, h := range rl.Crossing(r) {
		if !isIPAMResource(h.Vars["resource"]) {
			continue
		}
		h.Evidence = append(h.Evidence, result.Evidence{Name: "sandbox_seconds", Value: sandbox, Unit: "seconds", Labels: map[string]string{"phase": "sandbox"}, Result: podstartup.Name})
		h.Vars["sandbox"] = result.FormatQuantity(sandbox, "seconds")
		hits = append(hits, h)
	}
	return hits
}
