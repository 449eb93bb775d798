package check

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

const (
	sliSource    = "Kubernetes SIG Scalability pod start-up SLO: p99 <= 5 s, creation to all containers started and observed via watch, image pulls excluded"
	tailShareMin = 0.5
	tailP90Min   = 1.0
	// timestampPrecision is the precision of creationTimestamp, condition times and startedAt (seconds).
	timestampPrecision = 1.0
	controllerPace     = 25.0
	controllerMinPod   = 100
	createRateMin      = 0.8
)

// PodRules are the rules over the pod start-up benchmark.
func PodRules() []Rule {
	return []Rule{
		{
			ID: "KS-POD-SLO", Title: "Pod start-up is slower than the SLO", Severity: result.SeverityError, Cases: []string{"E"},
			Needs:       []string{podstartup.Name},
			Threshold:   result.Threshold{Op: ">", Value: podstartup.DefaultSLO.Seconds(), Unit: "seconds", Source: sliSource},
			Summary:     "pod start-up p99 {{.value}} > {{.threshold}} (see KS-POD-PHASE / KS-POD-NODE for where the time goes)",
			Remediation: "Look at the phase and node findings; the slow phase points at the scheduler (schedule), the CNI or runtime (sandbox), the kubelet or images (start), or the apiserver/watch (observe).",
			Match:       MetricAbove(podstartup.Name, "startup_sli_p99", ">", podstartup.DefaultSLO.Seconds(), "seconds"),
		},
		{
			ID: "KS-POD-PHASE", Title: "One phase dominates slow pod start-ups", Severity: result.SeverityWarning, Cases: []string{"E"},
			Needs: []string{podstartup.Name},
			Threshold: result.Threshold{Op: ">", Value: tailShareMin, Unit: "ratio",
				Source: "kubeslow attribution: share of the slowest 10% of pods' start-up time spent in one phase, when their p90 exceeds 1 s; a phase bounded by server timestamps (1 s precision) must dominate even with 1 s per pod taken away"},
			Summary:     "the {{.phase}} phase holds {{.share}} of the slow tail's start-up time (start-up p90 {{.p90}}): {{.meaning}}",
			Remediation: "schedule: scheduler throughput (its client QPS, --kube-api-qps, plugins, pending pods); sandbox: CNI IP allocation and runtime; start: kubelet, images, disks; observe: apiserver and watch delivery.",
			Match:       tailPhaseMatch,
		},
		{
			ID: "KS-POD-NODE", Title: "One node starts pods much slower than the others", Severity: result.SeverityWarning, Cases: []string{"E"},
			Needs: []string{podstartup.Name},
			Threshold: result.Threshold{Op: ">", Value: 2, Unit: "ratio",
				Source: "kubeslow outlier rule: a node's median start-up above twice the median of all nodes' medians, and at least 1 s slower"},
			Summary:     "{{.node}}: median start-up {{.value}} vs {{.cluster_p50}} s across nodes, mostly in the {{.phase}} phase ({{.pods}} pods)",
			Remediation: "Inspect that node: its CNI plugin and IPAM (sandbox phase), container runtime and disk (start phase), kubelet logs; cordon it if it keeps failing.",
			Match:       MetricAbove(podstartup.Name, "node_outlier_sli_p50", ">", 0, "seconds"),
		},
		{
			ID: "KS-POD-RATE", Title: "The controller creates pods at its client rate limit", Severity: result.SeverityWarning, Cases: []string{"E"},
			Needs: []string{podstartup.Name},
			Threshold: result.Threshold{Op: "<=", Value: controllerPace, Unit: "pods_per_second",
				Source: "kube-controller-manager's default --kube-api-qps=20 (burst 30): its controllers create pods at ~20/s; checked for workloads of at least 100 pods"},
			Summary:     "the controller created {{.pods}} pods at {{.value}}/s over {{.span}}: its client rate limit, not the scheduler or nodes, sets how long a large rollout takes",
			Remediation: "Raise kube-controller-manager --kube-api-qps/--kube-api-burst (with control-plane capacity to match), or create large workloads in parts.",
			Match:       controllerRateMatch,
		},
		{
			ID: "KS-POD-CREATE", Title: "Pods are created slower than requested", Severity: result.SeverityWarning, Cases: []string{"E"},
			Needs: []string{podstartup.Name},
			Threshold: result.Threshold{Op: "<", Value: createRateMin, Unit: "ratio",
				Source: "kubeslow: achieved creation rate below 80% of the rate kubeslow requested (its own limiter's wait is reported apart, so what remains is the apiserver)"},
			Summary:     "pods were created at {{.value}}/s of the {{.requested}}/s requested; the apiserver took p99 {{.latency}} per create (kubeslow's own limiter held them {{.wait}} in total)",
			Remediation: "The apiserver is slow to accept writes: see api.responsiveness and etcd.health (etcd disk, control-plane CPU, admission webhooks).",
			Match:       clientRateMatch,
		},
		{
			ID: "KS-POD-STUCK", Title: "Pods never started", Severity: result.SeverityError, Cases: []string{"E"},
			Needs:       []string{podstartup.Name},
			Threshold:   result.Threshold{Op: ">", Value: 0, Unit: "count", Source: "every benchmark pod must reach Running within the time-out"},
			Summary:     "{{.value}} pods never started: {{.reason}}",
			Remediation: "Read the reason (FailedScheduling: capacity or constraints; FailedCreatePodSandBox: CNI; ErrImagePull: registry) on the pods' events.",
			Match:       MetricAbove(podstartup.Name, "not_started_by_reason", ">", 0, "count"),
		},
	}
}

var phaseMeaning = map[string]string{
	"schedule": "pods wait for the scheduler to bind them",
	"sandbox":  "pods wait for their sandbox and network (CNI, runtime)",
	"start":    "containers take long to start (kubelet, images, disk)",
	"observe":  "status reaches watchers late (the kubelet's status updates after its 1 s PLEG relist, the apiserver, watch delivery)",
}

func tailPhaseMatch(r *result.Report) []Hit {
	res := r.Result(podstartup.Name)
	p90 := res.Metric("startup_sli_p90", nil)
	if p90 == nil || p90.Value <= tailP90Min {
		return nil
	}
	total := 0.0 // a tail pod's mean start-up, the sum of its phases
	for _, m := range res.Metrics {
		if m.Name == "tail_phase_mean" {
			total += m.Value
		}
	}
	var hits []Hit
	for _, m := range res.Metrics {
		if m.Name != "tail_phase_share" || m.Value <= tailShareMin {
			continue
		}
		// The phases after scheduling end or start at server timestamps, truncated to the second: up to 1 s of
		// a pod's time may sit in the wrong phase. Such a phase is named only if it dominates even with that
		// second taken away (schedule rests on local watch times only).
		mean := res.Metric("tail_phase_mean", m.Labels)
		if mean == nil {
			continue
		}
		if m.Labels["phase"] != "schedule" && (total <= 0 || (mean.Value-timestampPrecision)/total <= tailShareMin) {
			continue
		}
		hits = append(hits, Hit{
			Evidence: []result.Evidence{evidenceOf(m, podstartup.Name),
				{Name: p90.Name, Value: p90.Value, Unit: p90.Unit, Result: podstartup.Name}},
			Vars: map[string]string{"phase": m.Labels["phase"], "share": fmt.Sprintf("%.0f%%", m.Value*100),
				"p90": report.FormatValue(p90.Value) + " s", "meaning": phaseMeaning[m.Labels["phase"]]},
		})
	}
	return hits
}

func controllerRateMatch(r *result.Report) []Hit {
	res := r.Result(podstartup.Name)
	rate := res.Metric("creation_rate", map[string]string{"creator": "controller"})
	pods := res.Metric("pods", nil)
	span := res.Metric("creation_span", map[string]string{"creator": "controller"})
	if rate == nil || pods == nil || span == nil || pods.Value < controllerMinPod || rate.Value > controllerPace {
		return nil
	}
	return []Hit{{Evidence: []result.Evidence{evidenceOf(*rate, podstartup.Name),
		{Name: pods.Name, Value: pods.Value, Unit: pods.Unit, Result: podstartup.Name}},
		Vars: map[string]string{"value": report.FormatValue(rate.Value), "pods": report.FormatValue(pods.Value), "span": report.FormatValue(span.Value) + " s"}}}
}

func clientRateMatch(r *result.Report) []Hit {
	res := r.Result(podstartup.Name)
	rate := res.Metric("creation_rate", map[string]string{"creator": "client"})
	req := res.Metric("creation_rate_requested", nil)
	lat := res.Metric("create_request_p99", nil)
	wait := res.Metric("client_limiter_wait", nil)
	if rate == nil || req == nil || req.Value <= 0 || rate.Value/req.Value >= createRateMin || lat == nil || wait == nil {
		return nil
	}
	return []Hit{{Evidence: []result.Evidence{evidenceOf(*rate, podstartup.Name),
		{Name: req.Name, Value: req.Value, Unit: req.Unit, Result: podstartup.Name}, {Name: lat.Name, Value: lat.Value, Unit: lat.Unit, Result: podstartup.Name}},
		Vars: map[string]string{"value": report.FormatValue(rate.Value), "requested": report.FormatValue(req.Value),
			"latency": report.FormatValue(lat.Value) + " s", "wait": report.FormatValue(wait.Value) + " s"}}}
}
