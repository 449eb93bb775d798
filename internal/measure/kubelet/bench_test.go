package kubelet_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet/kubelettest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// BenchmarkKubelet5000 is nodes.kubelet's analysis and rules over 5,000 kubelets (each with the families
// kept of its /metrics, every node at the default serializeImagePulls: true) and 20,000 Pulled events'
// pulls (four per node, the recorded queued pair among them): kubeslow's side of a 5,000-node kubelet
// sweep, besides the requests.
func BenchmarkKubelet5000(b *testing.B) {
	cfg, err := kubelet.ParseConfigz([]byte(`{"kubeletconfig":{"maxPods":110,"kubeAPIQPS":50,"runtimeRequestTimeout":"2m0s"}}`))
	if err != nil {
		b.Fatal(err)
	}
	e := promtest.NewExpo()
	e.Hist("kubelet_pod_start_sli_duration_seconds", "", 40, 1)
	for _, op := range []string{"create_container", "start_container", "run_podsandbox", "list_containers", "container_status", "pull_image"} {
		e.Hist("kubelet_runtime_operations_duration_seconds", `operation_type="`+op+`"`, 40, 0.02)
	}
	e.Hist("kubelet_pleg_relist_duration_seconds", "", 100, 0.004)
	e.Hist("kubelet_image_pull_duration_seconds", "", 10, 5)
	e.Counter("kubelet_runtime_operations_errors_total", `operation_type="pull_image"`, 0)
	snap := e.Snapshot(&testing.T{}, ruletest.T0)
	queued := kubelettest.RecordedPulls(b, "pulled-queued.json", "", "pull-big", "pull-small")
	var nodes []kubelet.Node
	var pulls []kubelet.Pull
	for i := range 5000 {
		n := fmt.Sprintf("node-%04d", i)
		nodes = append(nodes, kubelet.Node{Name: n, CPUs: 8, Config: cfg, Metrics: snap, LargestImage: "r/app:1", LargestImageBytes: 300 << 20})
		for j, p := range append(append([]kubelet.Pull(nil), queued...), queued...) {
			p.Node = n
			if i%500 != 0 { // most nodes' pulls did not queue
				p.Total = p.Pull
			}
			p.Done = p.Done.Add(time.Duration(j) * time.Minute)
			pulls = append(pulls, p)
		}
	}
	rules := kubelet.Rules()
	b.ResetTimer()
	for range b.N {
		res := kubelet.Analyze(nodes, pulls, nil)
		fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{res}}, rules)
		if len(fs) == 0 {
			b.Fatal("no finding from the queued nodes")
		}
	}
}

// TestLongestWaitsRecorded: the lab's recorded pulls (TestIntegrationImagePull/serialized): the small image
// alone waited for nothing; the small image behind the 33 MiB one waited 16.3 s, and the 33 MiB pull is named.
func TestLongestWaitsRecorded(t *testing.T) {
	pulls := kubelettest.RecordedPulls(t, "pulled-serialized.json", "lab-node-1", "pull-alone", "pull-big", "pull-small")
	if q := kubelet.LongestWaits(pulls[:1])["lab-node-1"]; q.Waited.Wait() != 0 || q.Longest != 6332*time.Millisecond {
		t.Errorf("alone: %+v", q)
	}
	q := kubelet.LongestWaits(pulls)["lab-node-1"]
	if q.Waited.Pod != "pull-small" || q.Waited.Wait() != 16261*time.Millisecond || !strings.HasSuffix(q.Blocker.Image, "/lab/medium:1") || q.Pulls != 3 {
		t.Errorf("queued: %+v", q)
	}
}
