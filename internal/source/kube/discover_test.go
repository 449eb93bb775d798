package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func apiserverPod(args ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-cp1", Namespace: "kube-system", Labels: map[string]string{"component": "kube-apiserver"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-apiserver", Command: append([]string{"kube-apiserver"}, args...)}}}}
}

func TestEventsEtcd(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		objs []*corev1.Pod
		want string
	}{
		"managed (no apiserver pod)": {nil, "unknown"},
		"shared":                     {[]*corev1.Pod{apiserverPod("--etcd-servers=https://127.0.0.1:2379")}, "shared"},
		"separate":                   {[]*corev1.Pod{apiserverPod("--etcd-servers=https://127.0.0.1:2379", "--etcd-servers-overrides=/events#https://10.0.0.5:2379")}, "separate"},
	}
	for name, c := range cases {
		cs := fake.NewClientset()
		for _, p := range c.objs {
			if _, err := cs.CoreV1().Pods("kube-system").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := eventsEtcd(ctx, cs); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
}

func TestDiscoverCountsNodes(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	cs := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}, Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-1"}},
	)
	cl, err := Discover(context.Background(), cs, "ctx", "https://x")
	if err != nil {
		t.Fatal(err)
	}
	if cl.Nodes.Total != 2 || cl.Nodes.Ready != 1 || cl.Nodes.Simulated != 1 || cl.Facts["provider"] != "aws" || cl.Facts["events-etcd"] != "unknown" {
		t.Fatalf("%+v", cl)
	}
}
