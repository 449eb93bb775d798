// Package kubelettest is nodes.kubelet's analysis of scripted kubelets: the fixtures of its rules.
package kubelettest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Fleet is four kubelets: each node's /configz (as a kubelet 1.36 returns it) and /metrics (written in the
// exposition format), with the largest image its status lists.
type Fleet struct {
	Serial  map[string]bool    // node -> serializeImagePulls (absent: the kubelet leaves it at its default)
	Largest map[string]int64   // node -> largest image bytes
	StartS  map[string]float64 // node -> pod start SLI observations' value (seconds)
	Pulls   []kubelet.Pull     // the Pulled events' pulls
	RtS     map[string]float64 // node -> runtime operations' value (seconds; 0.02 when absent)
}

// Result is kubelet.Analyze over the fleet.
func (k Fleet) Result(t *testing.T) result.Result {
	t.Helper()
	var nodes []kubelet.Node
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		serial := ""
		if v, ok := k.Serial[n]; ok {
			serial = fmt.Sprintf(`"serializeImagePulls":%v,`, v)
		}
		cfg, err := kubelet.ParseConfigz([]byte(`{"kubeletconfig":{` + serial + `"maxPods":110,"kubeAPIQPS":50,"kubeAPIBurst":100,` +
			`"runtimeRequestTimeout":"2m0s","failCgroupV1":false}}`))
		if err != nil {
			t.Fatal(err)
		}
		e := promtest.NewExpo()
		e.Hist("kubelet_pod_start_sli_duration_seconds", "", 40, k.StartS[n])
		rt := 0.02
		if v, ok := k.RtS[n]; ok {
			rt = v
		}
		e.Hist("kubelet_runtime_operations_duration_seconds", `operation_type="create_container"`, 40, rt)
		e.Hist("kubelet_runtime_operations_duration_seconds", `operation_type="pull_image"`, 5, 30) // pulls are left out
		e.Hist("kubelet_pleg_relist_duration_seconds", "", 100, 0.004)
		e.Counter("kubelet_runtime_operations_errors_total", `operation_type="pull_image"`, 0)
		nodes = append(nodes, kubelet.Node{Name: n, CPUs: 4, LargestImage: "registry.example/big:1", LargestImageBytes: k.Largest[n], Config: cfg,
			Metrics: e.Snapshot(t, ruletest.T0)})
	}
	return kubelet.Analyze(nodes, k.Pulls, nil)
}

// RecordedPulls are the pulls nodes.kubelet reads from the Pulled events recorded on the lab
// (internal/measure/kubelet/testdata), as seen on node (the recording's lab-node-1), keeping those of pods.
func RecordedPulls(t testing.TB, file, node string, pods ...string) []kubelet.Pull {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ruletest.Path("internal/measure/kubelet/testdata"), file))
	if err != nil {
		t.Fatal(err)
	}
	var evs corev1.EventList
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatal(err)
	}
	var out []kubelet.Pull
	for i := range evs.Items {
		p, ok := kubelet.PullOf(&evs.Items[i])
		if ok && slices.Contains(pods, p.Pod) {
			p.Node = node
			out = append(out, p)
		}
	}
	if len(out) != len(pods) {
		t.Fatalf("%s: %d pulls of %v", file, len(out), pods)
	}
	return out
}

// RuleFixtures are kubelet.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	kf := func(k Fleet) func(t *testing.T) *result.Report { return ruletest.One(k.Result) }
	even := map[string]float64{"n1": 1, "n2": 1, "n3": 1, "n4": 1}
	small := map[string]int64{"n1": 40 << 20, "n2": 40 << 20, "n3": 40 << 20, "n4": 40 << 20}
	big := map[string]int64{"n1": 40 << 20, "n2": 17 << 30, "n3": 40 << 20, "n4": 40 << 20}
	parallel := map[string]bool{"n1": false, "n2": false, "n3": false, "n4": false}
	kp := func(file string, pods ...string) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report {
			return ruletest.One(Fleet{Largest: small, StartS: even, Pulls: RecordedPulls(t, file, "n2", pods...)}.Result)(t)
		}
	}
	return map[string]ruletest.Fixture{
		// recorded on the lab: the small pull queued 16 s behind the 33 MiB one (maxParallelImagePulls: 1); the
		// small image pulled alone from the same slow registry (6.3 s, nothing ahead of it) is no queueing.
		"KS-NODE-PULL-QUEUE": {Fire: kp("pulled-queued.json", "pull-big", "pull-small"), Clear: kp("pulled-serialized.json", "pull-alone")},
		// n3's runtime at 4 s against 0.02 s elsewhere; all nodes at 2 s alike is no outlier (and the 30 s pulls count in neither).
		"KS-NODE-RUNTIME-OUTLIER": {Fire: kf(Fleet{Largest: small, StartS: even, RtS: map[string]float64{"n3": 4}}),
			Clear: kf(Fleet{Largest: small, StartS: even, RtS: map[string]float64{"n1": 2, "n2": 2, "n3": 2, "n4": 2}})},
		// the default (serialized) with a 17 GiB image on n2; the same image with parallel pulls, or serialized with small images.
		"KS-NODE-SERIAL-PULLS":  {Fire: kf(Fleet{Largest: big, StartS: even}), Clear: kf(Fleet{Serial: parallel, Largest: big, StartS: even})},
		"KS-NODE-START-OUTLIER": {Fire: kf(Fleet{Largest: small, StartS: map[string]float64{"n1": 1, "n2": 1, "n3": 9, "n4": 1}}), Clear: kf(Fleet{Largest: small, StartS: map[string]float64{"n1": 8, "n2": 9, "n3": 9, "n4": 8}})}, // all slow alike: no outlier
	}
}
