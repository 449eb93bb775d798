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
)

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
	}}
}

// Rules are the rules over the measurement's result (rule.Source).
func (*Measurement) Rules() []rule.Rule { return Rules() }
