package kubelet

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the kubelet rules read.
var (
	kubeletSerial     = rule.Metric{Result: Name, Name: MetricSerializePulls}
	kubeletLargest    = rule.Metric{Result: Name, Name: MetricLargestImage}
	kubeletStartRatio = rule.Metric{Result: Name, Name: MetricPodStartVsMedian}
	kubeletStartP99   = rule.Metric{Result: Name, Name: MetricPodStartP99}
	kubeletRtRatio    = rule.Metric{Result: Name, Name: MetricRuntimeOpVsMedian}
	kubeletRtP99      = rule.Metric{Result: Name, Name: MetricRuntimeOpP99}
	kubeletPullWait   = rule.Metric{Result: Name, Name: MetricPullWait}
)

// perNode keys each crossing by its node alone (the metric's other labels are the summary's words).
func perNode(r *result.Report, ru rule.Rule) []rule.Hit {
	hits := ru.Crossing(r)
	for i := range hits {
		hits[i].Key = "node=" + hits[i].Vars["node"]
	}
	return hits
}

// Rules are the rules over the kubelets' settings and metrics read through the node proxy.
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-NODE-SERIAL-PULLS", Title: "Serialized image pulls with large images", Severity: result.SeverityWarning, Cases: []string{"B"},
		When: rule.Condition{Metric: kubeletSerial, Op: ">=", Value: 1, Unit: "bool"},
		Also: []rule.Condition{{Metric: kubeletLargest, Op: ">=", Value: 1 << 30, Unit: "bytes"}},
		Source: "kubelet serializeImagePulls (default true): one pull at a time per node; case B's 17 GB image blocked every other pull " +
			"behind it. kubeslow's threshold: an image of 1 GiB or more on the node",
		Summary: "{{.node}} pulls one image at a time (serializeImagePulls: true) and holds images up to {{.largest_image_bytes}}: " +
			"a small image's pull waits behind a large one",
		Remediation: "Set serializeImagePulls: false with maxParallelImagePulls (e.g. 5) in the kubelet configuration; preload large images " +
			"(a DaemonSet or the node image) or pull them from a local mirror.",
	}, {
		ID: "KS-NODE-START-OUTLIER", Title: "A node's kubelet starts pods much slower than the others", Severity: result.SeverityWarning, Cases: []string{"E"},
		When: rule.Condition{Metric: kubeletStartRatio, Op: ">=", Value: 3, Unit: "ratio"},
		Also: []rule.Condition{{Metric: kubeletStartP99, Op: ">=", Value: 5, Unit: "seconds"}},
		Source: "the pod start-up SLI (kubelet_pod_start_sli_duration_seconds, image pulls excluded) p99 < 5 s; a node at 3x the " +
			"nodes' median is an outlier (kubeslow)",
		Summary: "{{.node}}'s kubelet pod-start SLI p99 is {{.pod_start_sli_p99}}, {{.value}} times the nodes' median: something on that node " +
			"(disk, runtime, CNI) is slow",
		Remediation: "Look at that node's disk (nodes.agent: sync latency, spinning disk, I/O pressure), its runtime operation latency and " +
			"errors, and its CNI; drain it if it cannot be fixed at once.",
	}, {
		ID: "KS-NODE-RUNTIME-OUTLIER", Title: "A node's container runtime answers the kubelet much slower than the others'", Severity: result.SeverityWarning, Cases: []string{"E"},
		When: rule.Condition{Metric: kubeletRtRatio, Op: ">=", Value: 3, Unit: "ratio"},
		Also: []rule.Condition{{Metric: kubeletRtP99, Op: ">=", Value: 1, Unit: "seconds"}},
		Source: "kubelet_runtime_operations_duration_seconds (every CRI call but image pulls) p99 at 3x the nodes' median (kubeslow, as for the " +
			"pod-start outlier) and 1 s or more: the kubelet's PLEG relists every second, so a runtime call past 1 s holds up the node's pod workers",
		Summary: "{{.node}}'s container runtime takes {{.runtime_operations_p99}} at p99 per call (image pulls excluded), {{.value}} times the " +
			"nodes' median: every pod start and status update on that node waits on it",
		Remediation: "Look at that node's runtime (containerd's log, its CPU and memory), the disk under it (nodes.agent: sync latency, I/O " +
			"pressure) and its number of containers; restart or drain the node if the runtime stays slow.",
	}, {
		ID: "KS-NODE-PULL-QUEUE", Title: "Image pulls queued behind other pulls on a node", Severity: result.SeverityWarning, Cases: []string{"B"},
		When: rule.Condition{Metric: kubeletPullWait, Op: ">=", Value: 5, Unit: "seconds"},
		Source: "the kubelet's Pulled event (\"in P (T including waiting)\"): T-P is the time the pull waited for the node's puller, which takes " +
			"one pull at a time with serializeImagePulls: true (the default) and at most maxParallelImagePulls otherwise; case B's 17 GB image " +
			"blocked every other pull behind it. kubeslow's threshold: 5 s of waiting, the whole budget of the pod start-up SLO (p99 5 s)",
		Summary: "on {{.node}} ({{.setting}}) {{.pod}}'s pull of {{.image}} waited {{.value}} for the puller behind {{.behind}}; " +
			"its own pull took {{.pull}}",
		Remediation: "Let the kubelet pull in parallel: serializeImagePulls: false with maxParallelImagePulls (e.g. 5; raise it if it is already " +
			"set); preload large images (the node image, or a pre-pull DaemonSet) or serve them from a registry mirror next to the nodes so the " +
			"large pull is short.",
		Match: perNode,
	}}
}
