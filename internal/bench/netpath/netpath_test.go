package netpath

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func node(name string, ready, unschedulable, kwok bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	if kwok {
		n.Annotations["kwok.x-k8s.io/node"] = "fake"
	}
	return n
}

// TestRealNodes: only Ready, schedulable, non-simulated nodes carry the agents; none at all is a skip with
// the reason, not an error.
func TestRealNodes(t *testing.T) {
	cs := fake.NewClientset(node("real-1", true, false, false), node("real-2", true, true, false), node("real-3", false, false, false), node("kwok-1", true, false, true))
	env := &measure.Env{Client: cs, Namespace: "ns", RunID: "r"}
	got, err := measure.RealNodes(context.Background(), env)
	if err != nil || len(got) != 1 || got[0].Name != "real-1" {
		t.Fatalf("real nodes %v %v", got, err)
	}
	env.Client = fake.NewClientset(node("kwok-1", true, false, true))
	_, err = New(Options{Image: "x"}).Run(context.Background(), env)
	var se *measure.SkipError
	if !errors.As(err, &se) {
		t.Fatalf("no real node: %v, want a skip", err)
	}
}

// TestNodeNetResult: a node's overlay devices (not its veths), conntrack and ARP fill and kube-proxy's rules
// become metrics; a pod's interfaces all do; what was unreadable on a node is recorded.
func TestNodeNetResult(t *testing.T) {
	var res result.Result
	NodeNetResult(&res, "node n1", &agent.NodeNet{
		Interfaces:       []agent.Iface{{Name: "eth0", MTU: 1500}, {Name: "flannel.1", MTU: 1450, Kind: "vxlan"}, {Name: "veth1", MTU: 1450}},
		ConntrackEntries: 50, ConntrackMax: 200, Neighbours: -1, NeighThresh3: -1,
		KubeProxyMode: "iptables", KubeProxyRules: map[string]int64{"nat/IPv4": 300, "filter": 7}, Unread: []string{"neighbours: no such file"},
	})
	NodeNetResult(&res, "pod", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "eth0", MTU: 1450}}, ConntrackEntries: -1, Neighbours: -1})
	got := map[string]float64{}
	for _, m := range res.Metrics {
		got[m.Name+"/"+m.Labels["where"]+"/"+m.Labels["iface"]+m.Labels["table"]+m.Labels["family"]] = m.Value
	}
	want := map[string]float64{"mtu/node n1/flannel.1": 1450, "conntrack_entries/node n1/": 50, "conntrack_usage/node n1/": 0.25,
		"kube_proxy_rules/node n1/natIPv4": 300, "kube_proxy_rules/node n1/filter": 7, "mtu/pod/eth0": 1450}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(res.Records) != 2 || res.Records[0].Labels["kube_proxy_mode"] != "iptables" || res.Records[0].Labels["overlay"] != "flannel.1 (vxlan, MTU 1450)" ||
		res.Records[0].Labels["unread"] == "" {
		t.Errorf("records %+v", res.Records)
	}
}

// TestWidestPath: extra rounds go to the path with the widest requests/s spread above WideSpread, in either
// HTTP mode, until it has had as many extra rounds as the base; narrow paths get none.
func TestWidestPath(t *testing.T) {
	paths := []Path{{Name: "host->host"}, {Name: "pod->Service"}, {Name: "pod->pod"}}
	s := map[string][]float64{
		SampleKey("host->host", "rps", "keepalive"): {100, 105, 98}, SampleKey("host->host", "rps", "new"): {10, 10, 11},
		SampleKey("pod->Service", "rps", "keepalive"): {90, 91, 92}, SampleKey("pod->Service", "rps", "new"): {1, 2, 11},
		SampleKey("pod->pod", "rps", "keepalive"): {50, 80, 100}, SampleKey("pod->pod", "rps", "new"): {9, 9, 9},
	}
	extra := map[string]int{}
	for _, want := range []string{"pod->Service", "pod->Service", "pod->Service", "pod->pod", "pod->pod", "pod->pod", ""} {
		p, ok := WidestPath(paths, s, extra, 3)
		if p.Name != want || ok != (want != "") {
			t.Fatalf("extra %v: got %q %v, want %q", extra, p.Name, ok, want)
		}
		extra[p.Name]++
	}
	// Narrow everywhere: none.
	if p, ok := WidestPath(paths[:1], s, map[string]int{}, 3); ok {
		t.Errorf("narrow spread got extra rounds: %s", p.Name)
	}
}

// TestHopCosts: each hop is costed between the two paths that differ by it alone, in throughput and latency.
func TestHopCosts(t *testing.T) {
	s := map[string][]float64{}
	put := func(path, metric, conn string, v float64) {
		s[SampleKey(path, metric, conn)] = []float64{v * 0.98, v, v * 1.03}
	}
	for path, f := range map[string]float64{"host->host": 1, "host->pod": 1.1, "pod->pod other node": 1.25, "pod->Service": 2.5, "host->NodePort": 3.3} {
		put(path, "rps", "new", 10000/f)
		put(path, "latency_p50", "new", 0.001*f)
		put(path, "latency_p99", "new", 0.004*f)
	}
	var res result.Result
	HopCosts(&res, s)
	got := map[string]float64{}
	for _, m := range res.Metrics {
		got[m.Name+"/"+m.Labels["path"]+"/"+m.Labels["conn"]] = m.Value
	}
	near := func(k string, want float64) {
		if v := got[k]; v < want*0.999 || v > want*1.001 {
			t.Errorf("%s = %v, want %v", k, v, want)
		}
	}
	near("hop_throughput_cost/pod->pod other node/new", 1.25)
	near("hop_throughput_cost/pod->Service/new", 2)
	near("hop_p99_cost/pod->Service/new", 2)
	near("hop_p50_cost/host->NodePort/new", 3.3)
	if _, ok := got["hop_throughput_cost/pod->pod other node/keepalive"]; ok {
		t.Error("a hop costed without samples")
	}
	if len(res.Records) != 1 || !strings.Contains(res.Records[0].Labels["hops"], "Service (kube-proxy DNAT, conntrack) 2.00x, p50 2.00x, p99 2.00x (pod->Service at 0.40x host->host's throughput)") {
		t.Errorf("records %+v", res.Records)
	}
}
