package throttle

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ThrottledMax is the share of CFS periods above which a container is throttled too often: kubernetes-mixin's
// CPUThrottlingHigh alert.
const ThrottledMax = 0.25

var (
	throttledRatio = rule.Metric{Result: Name, Name: MetricThrottledRatio}
	cpuLimit       = rule.Metric{Result: Name, Name: MetricCPULimit}
	cpuUsed        = rule.Metric{Result: Name, Name: MetricCPUUsed}
)

// perContainer keys each crossing by node, pod and container, and names the CPU the container used.
func perContainer(r *result.Report, ru rule.Rule) []rule.Hit {
	hits := ru.Crossing(r)
	res := r.Result(Name)
	for i := range hits {
		h := &hits[i]
		l := map[string]string{"node": h.Vars["node"], "pod": h.Vars["pod"], "container": h.Vars["container"]}
		h.Key = result.FormatLabels(l)
		h.Vars["share"] = fmt.Sprintf("%.0f%%", 100*h.Value)
		if m := res.Metric(MetricCPUUsed, l); m != nil {
			h.Vars[MetricCPUUsed] = result.FormatQuantity(m.Value, "cores")
			h.Evidence = append(h.Evidence, rule.EvidenceOf(*m, Name))
		}
	}
	return hits
}

// Rules are the rules over kube-system's CPU throttling.
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-SYSTEM-THROTTLED", Title: "A cluster-critical kube-system container is CPU-throttled", Severity: result.SeverityWarning, Cases: []string{"B"},
		When:  rule.Condition{Metric: throttledRatio, Op: ">", Value: ThrottledMax, Unit: "ratio"},
		Also:  []rule.Condition{{Metric: cpuLimit, Op: ">", Value: 0, Unit: "cores"}},
		Reads: []rule.Metric{cpuUsed},
		Source: "kubernetes-mixin's CPUThrottlingHigh alert: container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total " +
			"above 25% (cAdvisor's CFS counters over the window)",
		Summary: "{{.pod}}/{{.container}} on {{.node}} was throttled in {{.share}} of its CFS periods ({{.value}}), using {{.cpu_used_cores}} on average " +
			"under a CPU limit of {{.cpu_limit_cores}}: the kernel holds it back in bursts, and every DNS lookup or network change " +
			"that waits on it waits too",
		Remediation: "Raise or remove the CPU limit of cluster-critical kube-system pods (keep a CPU request so they are scheduled and " +
			"weighted, as the Kubernetes docs advise for system components; a limit only caps bursts); for CoreDNS also run more " +
			"replicas spread across nodes (the dns-autoscaler, or a topology spread) so each gets less of the load.",
		Match: perContainer,
	}}
}
