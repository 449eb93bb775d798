package lab

import (
	"bytes"
	"embed"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

//go:embed stages/*.yaml
var stageFS embed.FS

var stageFiles = []string{"node-initialize.yaml", "node-heartbeat-with-lease.yaml", "pod-ready.yaml", "pod-complete.yaml", "pod-delete.yaml"}

// KwokNodeLeaseDuration is the Lease each simulated node holds in kube-node-lease, as a kubelet does with its
// default nodeLeaseDurationSeconds (40 s). kwok renews it every quarter of that (10 s, 4% jitter, kubelet's
// interval), so the node lifecycle controller sees a heartbeat well within its node-monitor-grace-period (50 s) and
// never marks a healthy simulated node NotReady. kwok's node-heartbeat-with-lease stage (in stageFiles) then
// refreshes the node's status only every 10-20 minutes, as a kubelet does when its lease is the heartbeat.
const KwokNodeLeaseDuration = 40 * time.Second

// MinNodeMonitorGracePeriod is the shortest Config.NodeMonitorGracePeriod: three of kwok's renewal intervals, so
// that a healthy simulated node is marked NotReady only when two renewals in a row are late.
const MinNodeMonitorGracePeriod = 3 * KwokNodeLeaseDuration / 4

// KwokNodeAnnotation marks nodes kwok manages (and only those); see kube.IsSimulated.
const (
	KwokNodeAnnotation = kube.SimulatedNodeAnnotation
	KwokNodeLabel      = kube.SimulatedNodeLabel
	KwokNodeLabelValue = kube.SimulatedNodeLabelValue
)

// kwokStages renders kwok's stage configuration: kwok's own "fast" stages with the configured delays on
// pod-ready, and a second pod-ready stage for the slow nodes.
func kwokStages(s KwokSettings) ([]byte, error) {
	var out bytes.Buffer
	for _, f := range stageFiles {
		b, err := stageFS.ReadFile("stages/" + f)
		if err != nil {
			return nil, err
		}
		if f != "pod-ready.yaml" {
			out.WriteString("---\n")
			out.Write(b)
			continue
		}
		normal, err := podReadyStage(b, "pod-ready", s.PodReadyDelay.Duration.Milliseconds(), s.PodReadyJitter.Duration.Milliseconds(), s.SlowNodes, "NotIn")
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(normal)
		if len(s.SlowNodes) > 0 {
			slow, err := podReadyStage(b, "pod-ready-slow-nodes", s.SlowNodeDelay.Duration.Milliseconds(), s.PodReadyJitter.Duration.Milliseconds(), s.SlowNodes, "In")
			if err != nil {
				return nil, err
			}
			out.WriteString("---\n")
			out.Write(slow)
		}
	}
	return out.Bytes(), nil
}

// podReadyStage adapts kwok's pod-ready stage: a new name, a delay (kwok draws the actual delay uniformly
// from [delay, delay+jitter]) and, when nodes is set, a selector on the pod's node.
func podReadyStage(src []byte, name string, delayMS, jitterMS int64, nodes []string, op string) ([]byte, error) {
	var st map[string]any
	if err := yaml.Unmarshal(src, &st); err != nil {
		return nil, fmt.Errorf("kwok stage: %w", err)
	}
	meta, _ := st["metadata"].(map[string]any)
	spec, _ := st["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	exprs, _ := sel["matchExpressions"].([]any)
	if meta == nil || spec == nil || sel == nil || exprs == nil {
		return nil, fmt.Errorf("kwok stage %s: unexpected layout", name)
	}
	meta["name"] = name
	if delayMS > 0 || jitterMS > 0 {
		spec["delay"] = map[string]any{"durationMilliseconds": delayMS, "jitterDurationMilliseconds": delayMS + jitterMS}
	}
	if len(nodes) > 0 {
		vals := make([]any, len(nodes))
		for i, n := range nodes {
			vals[i] = n
		}
		sel["matchExpressions"] = append(exprs, map[string]any{"key": ".spec.nodeName", "operator": op, "values": vals})
	}
	return yaml.Marshal(st)
}

// KwokNodeName is the name of the i-th simulated node (1-based).
func KwokNodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }
