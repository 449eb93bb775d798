package dnsfacts

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func node(name, zone string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ZoneLabel: zone}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func dnsPod(name, nodeName string) *corev1.Pod {
	yes := true
	own := map[string]string{"k8s-app": "kube-dns", "pod-template-hash": "abc12"}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: own,
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "coredns-abc12", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Image: "registry.k8s.io/coredns/coredns:v1.15.0",
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9153}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "198.18.1.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func env(objs ...any) *measure.Env {
	cs := fake.NewClientset()
	for _, o := range objs {
		switch x := o.(type) {
		case *corev1.Node:
			_, _ = cs.CoreV1().Nodes().Create(context.Background(), x, metav1.CreateOptions{})
		case *corev1.Pod:
			_, _ = cs.CoreV1().Pods(x.Namespace).Create(context.Background(), x, metav1.CreateOptions{})
		case *corev1.Service:
			_, _ = cs.CoreV1().Services(x.Namespace).Create(context.Background(), x, metav1.CreateOptions{})
		}
	}
	return &measure.Env{Client: cs, Clock: clock.RealClock{}, Log: slog.New(slog.DiscardHandler)}
}

var kubeDNS = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
	Spec: corev1.ServiceSpec{ClusterIP: "198.19.0.10", Selector: map[string]string{"k8s-app": "kube-dns"}}}

// TestRunPackedCluster: Run over a cluster (fake API) with two of three CoreDNS pods on one of three nodes,
// their metrics read through the (replaced) pod proxy from recorded CoreDNS scrapes: the placement, the
// workload, the server and the per-replica rates come out of Run itself.
func TestRunPackedCluster(t *testing.T) {
	e := env(node("n1", "z1"), node("n2", "z1"), node("n3", "z2"), kubeDNS, dnsPod("coredns-abc12-a", "n1"), dnsPod("coredns-abc12-b", "n1"), dnsPod("coredns-abc12-c", "n2"))
	var scrapes atomic.Int32
	m := New(50 * time.Millisecond)
	m.Proxy = func(_ context.Context, _ *measure.Env, ns, pod string, port int) ([]byte, error) {
		if ns != "kube-system" || port != 9153 {
			t.Errorf("proxy %s/%s:%d", ns, pod, port)
		}
		when := "before"
		if scrapes.Add(1) > 3 {
			when = "after"
		}
		return os.ReadFile("testdata/recorded-" + pod[len(pod)-1:] + "-" + when + ".txt")
	}
	res, err := m.Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string, labels map[string]string) float64 {
		x := res.Metric(name, labels)
		if x == nil {
			t.Fatalf("no %s %v in %+v", name, labels, res.Metrics)
		}
		return x.Value
	}
	if get(MetricReplicas, nil) != 3 || get(MetricRealNodes, nil) != 3 || get(MetricReplicasOnNode, map[string]string{"node": "n1"}) != 2 ||
		get(MetricReplicasInZone, map[string]string{"zone": "z1"}) != 3 || get(MetricSpreadProtected, nil) != 0 {
		t.Fatalf("placement %+v", res.Metrics)
	}
	if share := get(MetricNodeQueryShare, map[string]string{"node": "n1"}); share < 0.66 || share > 0.67 {
		t.Fatalf("n1's share %g", share)
	}
	if get(MetricRequestsPerSecond, map[string]string{"pod": "coredns-abc12-a"}) <= 0 || get(MetricErrorShare, map[string]string{"pod": "coredns-abc12-a"}) < 0.3 {
		t.Fatalf("replica a %+v", res.Metrics)
	}
	if l := res.Records[0].Labels; l["server"] != "CoreDNS" || l["workload"] != "Deployment kube-system/coredns" || l["protection"] != "none" {
		t.Fatalf("facts %+v", l)
	}
}

// TestRunWithoutProxyPermission: a Forbidden pod proxy keeps the placement and says the metrics were
// skipped, with the reason.
func TestRunWithoutProxyPermission(t *testing.T) {
	e := env(node("n1", ""), node("n2", ""), kubeDNS, dnsPod("coredns-abc12-a", "n1"), dnsPod("coredns-abc12-b", "n1"))
	m := New(10 * time.Millisecond)
	m.Proxy = func(context.Context, *measure.Env, string, string, int) ([]byte, error) {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/proxy"}, "coredns", nil)
	}
	res, err := m.Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Records[0].Labels["metrics"], "skipped: no permission") || res.Metric(MetricReplicasOnNode, map[string]string{"node": "n1"}).Value != 2 ||
		res.Metric(MetricRequestsPerSecond, nil) != nil || res.Status != result.StatusPass {
		t.Fatalf("%+v", res)
	}
}

// TestRunWithoutDNSService: a cluster without kube-system/kube-dns (the lab with simulated nodes only) is
// measured: no DNS, no replica.
func TestRunWithoutDNSService(t *testing.T) {
	res, err := New(10*time.Millisecond).Run(context.Background(), env(node("n1", "")))
	if err != nil || res.Status != result.StatusPass || res.Metric(MetricReplicas, nil).Value != 0 || res.Records[0].Labels["server"] != "none" {
		t.Fatalf("%+v %v", res, err)
	}
}
