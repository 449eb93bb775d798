package kube

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestCleanup: only objects with kubeslow's labels (and the run's) are deleted; the contents of a namespace
// kubeslow deletes are left to the namespace (one DELETE, not one per pod).
func TestCleanup(t *testing.T) {
	pod := func(name, ns string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l}}
	}
	ours, other := RunLabels("r1"), RunLabels("r2")
	objs := []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: ObjectMeta("kubeslow-r1", "", "r1")},
		pod("a", "kubeslow-r1", ours), pod("b", "kubeslow-r1", ours),
		pod("c", "default", ours),                        // ours, outside our namespace: deleted
		pod("d", "default", map[string]string{"x": "y"}), // not ours: kept
		pod("e", "default", other),                       // another run's: kept
	}
	sc := runtime.NewScheme()
	_ = corev1.AddToScheme(sc)
	gvrs := map[schema.GroupVersionResource]string{}
	for _, g := range cleanupKinds {
		gvrs[g] = map[string]string{"namespaces": "NamespaceList", "pods": "PodList", "deployments": "DeploymentList",
			"daemonsets": "DaemonSetList", "jobs": "JobList", "services": "ServiceList", "configmaps": "ConfigMapList"}[g.Resource]
	}
	c := dynfake.NewSimpleDynamicClientWithCustomListKinds(sc, gvrs, objs...)
	var deletes []string
	c.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes = append(deletes, a.GetNamespace()+"/"+a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil
	})
	rep, err := Cleanup(context.Background(), c, "r1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(deletes) != 2 || deletes[0] != "/kubeslow-r1" || deletes[1] != "default/c" {
		t.Fatalf("deletes %v, want the namespace and default/c", deletes)
	}
	if rep.Deleted["namespaces"] != 1 || rep.Deleted["pods"] != 1 {
		t.Fatalf("report %+v", rep)
	}
}
