package kube

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
			"daemonsets": "DaemonSetList", "jobs": "JobList", "services": "ServiceList", "configmaps": "ConfigMapList", "clusterrolebindings": "ClusterRoleBindingList"}[g.Resource]
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

// TestCleanupClusterRoleBindings: the node tier's cluster-scoped binding (cpnode's MetricsAccess) is found by
// its labels and deleted, by run or for every run; the cluster's own bindings, and one that only names a run
// without kubeslow's managed-by label, are never touched.
func TestCleanupClusterRoleBindings(t *testing.T) {
	crb := func(name string, l map[string]string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{Kind: "ClusterRoleBinding", APIVersion: "rbac.authorization.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:monitoring"}}
	}
	objs := func() []runtime.Object {
		return []runtime.Object{
			crb("kubeslow-cp-agent-r1", RunLabels("r1")),
			crb("kubeslow-cp-agent-r2", RunLabels("r2")),
			crb("cluster-admin", map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}),
			crb("system:monitoring", nil),
			crb("lookalike", map[string]string{RunLabel: "r1"}), // the run label alone is not kubeslow's
		}
	}
	sc := runtime.NewScheme()
	_ = corev1.AddToScheme(sc)
	_ = rbacv1.AddToScheme(sc)
	gvrs := map[schema.GroupVersionResource]string{}
	for _, g := range cleanupKinds {
		gvrs[g] = map[string]string{"namespaces": "NamespaceList", "pods": "PodList", "deployments": "DeploymentList",
			"daemonsets": "DaemonSetList", "jobs": "JobList", "services": "ServiceList", "configmaps": "ConfigMapList", "clusterrolebindings": "ClusterRoleBindingList"}[g.Resource]
	}
	crbs := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	for _, tc := range []struct {
		run  string
		left []string
	}{
		{"r1", []string{"cluster-admin", "kubeslow-cp-agent-r2", "lookalike", "system:monitoring"}},
		{"", []string{"cluster-admin", "lookalike", "system:monitoring"}},
	} {
		c := dynfake.NewSimpleDynamicClientWithCustomListKinds(sc, gvrs, objs()...)
		rep, err := Cleanup(context.Background(), c, tc.run, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Resource(crbs).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, it := range l.Items {
			left = append(left, it.GetName())
		}
		sort.Strings(left)
		if strings.Join(left, ",") != strings.Join(tc.left, ",") || rep.Deleted["clusterrolebindings"] != 5-len(tc.left) {
			t.Errorf("cleanup --run %q: left %v (deleted %v), want %v", tc.run, left, rep.Deleted, tc.left)
		}
	}
}

// TestCleanupLeavesInstalledWatch: a cleanup of every run deletes the runs' objects but leaves what `kubeslow
// watch install` made (counted in the report); asked for that install by its run label, it deletes it.
func TestCleanupLeavesInstalledWatch(t *testing.T) {
	pod := func(name, ns string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l}}
	}
	sc := runtime.NewScheme()
	_ = corev1.AddToScheme(sc)
	gvrs := map[schema.GroupVersionResource]string{}
	for _, g := range cleanupKinds {
		gvrs[g] = map[string]string{"namespaces": "Namespace", "pods": "Pod", "deployments": "Deployment", "daemonsets": "DaemonSet",
			"jobs": "Job", "services": "Service", "configmaps": "ConfigMap", "clusterrolebindings": "ClusterRoleBinding"}[g.Resource] + "List"
	}
	for _, tc := range []struct {
		runID         string
		want          []string
		wantInstalled int
	}{
		{"", []string{"default/run-pod"}, 2},
		{InstalledRun, []string{"/kubeslow", "default/watch-pod"}, 0},
	} {
		objs := []runtime.Object{
			&corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: ObjectMeta("kubeslow", "", InstalledRun)},
			pod("watch-pod", "default", RunLabels(InstalledRun)),
			pod("run-pod", "default", RunLabels("r1")),
		}
		c := dynfake.NewSimpleDynamicClientWithCustomListKinds(sc, gvrs, objs...)
		var deletes []string
		c.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			deletes = append(deletes, a.GetNamespace()+"/"+a.(k8stesting.DeleteAction).GetName())
			return false, nil, nil
		})
		rep, err := Cleanup(context.Background(), c, tc.runID, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(deletes)
		if strings.Join(deletes, ",") != strings.Join(tc.want, ",") || rep.Installed != tc.wantInstalled {
			t.Errorf("run %q: deletes %v, installed kept %d; want %v, %d", tc.runID, deletes, rep.Installed, tc.want, tc.wantInstalled)
		}
	}
}
