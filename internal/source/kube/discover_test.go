package kube

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// TestDiscoverCNI: the CNI is named from a DaemonSet of a known name, or, where it runs outside one (the
// lab's flanneld processes, k3s's embedded flannel), from the annotations its agent writes on the Nodes, with
// flannel's backend; with neither it is "unknown".
func TestDiscoverCNI(t *testing.T) {
	node := func(ann map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: ann}}
	}
	ds := func(name string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	}
	flannelNode := node(map[string]string{"flannel.alpha.coreos.com/backend-type": "vxlan", "flannel.alpha.coreos.com/public-ip": "198.18.0.11"})
	for name, c := range map[string]struct {
		objs []runtime.Object
		want string
	}{
		"nothing known":                 {[]runtime.Object{node(nil), ds("kube-proxy")}, "unknown"},
		"flannel, no DaemonSet":         {[]runtime.Object{flannelNode}, "flannel (vxlan)"},
		"flannel's DaemonSet too":       {[]runtime.Object{flannelNode, ds("kube-flannel-ds")}, "flannel (vxlan)"},
		"calico by its DaemonSet":       {[]runtime.Object{node(nil), ds("calico-node")}, "calico"},
		"calico by its node annotation": {[]runtime.Object{node(map[string]string{"projectcalico.org/IPv4Address": "198.18.0.11/24"})}, "calico"},
		"canal: the DaemonSet's name":   {[]runtime.Object{flannelNode, ds("canal")}, "canal"},
	} {
		cl, err := Discover(context.Background(), fake.NewClientset(c.objs...), "ctx", "https://x")
		if err != nil {
			t.Fatal(err)
		}
		if cl.Facts["cni"] != c.want {
			t.Errorf("%s: cni %q, want %q", name, cl.Facts["cni"], c.want)
		}
	}
}
