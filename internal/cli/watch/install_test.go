package watch

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/cli/rbac"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/watch"
	"github.com/kubeslow/kubeslow/internal/watch/install"
)

func testFlags(sm string) *installFlags {
	f := &installFlags{namespace: install.DefaultNamespace, image: "registry.example/kubeslow:v1", serviceMonitor: sm}
	f.interval, f.hold, f.window, f.maxSeries = 5*time.Minute, watch.DefaultFor, 20*time.Second, watch.DefaultMaxSeries
	return f
}

// fakeCluster is a fake clientset and dynamic client; withCRD makes discovery serve ServiceMonitors.
func fakeCluster(withCRD bool, objs ...runtime.Object) (install.Clients, *fake.Clientset, *dynfake.FakeDynamicClient) {
	kc := fake.NewClientset(objs...)
	if withCRD {
		kc.Resources = []*metav1.APIResourceList{{GroupVersion: "monitoring.coreos.com/v1",
			APIResources: []metav1.APIResource{{Name: "servicemonitors", Namespaced: true, Kind: "ServiceMonitor"}}}}
	}
	dc := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{install.ServiceMonitorGVR: "ServiceMonitorList"})
	return install.Clients{Kube: kc, Dynamic: dc, Discovery: kc.Discovery()}, kc, dc
}

func streams() (common.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return common.IOStreams{Out: &out, ErrOut: &errOut}, &out, &errOut
}

// snapshot is every object of the kinds install touches, by kind, namespace and name, with labels.
func snapshot(t *testing.T, kc *fake.Clientset, dc *dynfake.FakeDynamicClient) []string {
	t.Helper()
	ctx := context.Background()
	var s []string
	add := func(kind string, items []metav1.Object) {
		for _, o := range items {
			s = append(s, kind+" "+o.GetNamespace()+"/"+o.GetName()+" "+labelsString(o.GetLabels()))
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	nss, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	must(err)
	add("namespace", install.Objs(nss.Items))
	sas, err := kc.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	must(err)
	add("serviceaccount", install.Objs(sas.Items))
	cms, err := kc.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	must(err)
	add("configmap", install.Objs(cms.Items))
	svcs, err := kc.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	must(err)
	add("service", install.Objs(svcs.Items))
	deps, err := kc.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	must(err)
	add("deployment", install.Objs(deps.Items))
	crs, err := kc.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	must(err)
	add("clusterrole", install.Objs(crs.Items))
	crbs, err := kc.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	must(err)
	add("clusterrolebinding", install.Objs(crbs.Items))
	dss, err := kc.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	must(err)
	add("daemonset", install.Objs(dss.Items))
	rs, err := kc.RbacV1().Roles("").List(ctx, metav1.ListOptions{})
	must(err)
	add("role", install.Objs(rs.Items))
	rbs, err := kc.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	must(err)
	add("rolebinding", install.Objs(rbs.Items))
	sms, err := dc.Resource(install.ServiceMonitorGVR).Namespace("").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range sms.Items {
		add("servicemonitor", []metav1.Object{&sms.Items[i]})
	}
	sort.Strings(s)
	return s
}

func labelsString(l map[string]string) string {
	var kv []string
	for k, v := range l {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// TestReadOnlyRulesEqualRBAC: the installed ClusterRole's rules are kubeslow rbac's read-only role's.
func TestReadOnlyRulesEqualRBAC(t *testing.T) {
	rules, err := ReadOnlyRules()
	if err != nil {
		t.Fatal(err)
	}
	// What kubeslow rbac prints, read independently of ReadOnlyRules: every rule's resource or URL and verbs.
	var out bytes.Buffer
	if err := rbac.NewCommand(common.IOStreams{Out: &out}).Execute(); err != nil {
		t.Fatal(err)
	}
	var want []rbacv1.PolicyRule
	for _, doc := range strings.Split(out.String(), "---\n") {
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &cr); err != nil {
			t.Fatal(err)
		}
		if cr.Name == rbac.ReadOnlyRole {
			want = cr.Rules
		}
	}
	if len(want) == 0 || !reflect.DeepEqual(rules, want) {
		t.Fatalf("rules differ from kubeslow rbac's %s:\n got %v\nwant %v", rbac.ReadOnlyRole, rules, want)
	}
	// And every read-only permission of the Specs is in them (a rule list of its own would drift).
	ro, _ := rbac.Needs()
	for _, n := range ro {
		found := false
		for _, r := range rules {
			if n.NonResourceURL != "" {
				found = found || contains(r.NonResourceURLs, n.NonResourceURL) && containsAll(r.Verbs, n.Verbs)
			} else {
				found = found || contains(r.APIGroups, n.Group) && contains(r.Resources, n.Resource) && containsAll(r.Verbs, n.Verbs)
			}
		}
		if !found {
			t.Errorf("%s: %v not granted", n.By, n.Permission)
		}
	}
	// Nothing but reads.
	for _, r := range rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("rule %v: verb %s is not a read", r, v)
			}
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func containsAll(l, want []string) bool {
	for _, w := range want {
		if !contains(l, w) {
			return false
		}
	}
	return true
}

// TestDryRunYAML: --dry-run prints every object as YAML that parses back to the expected kinds, all
// labelled, and applies nothing.
func TestDryRunYAML(t *testing.T) {
	cl, kc, dc := fakeCluster(true)
	before := snapshot(t, kc, dc)
	f := testFlags("auto")
	f.dryRun = true
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	s, out, _ := streams()
	if err := f.installWith(context.Background(), s, cl, o); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, doc := range strings.Split(out.String(), "---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		kinds = append(kinds, u.GetKind())
		if !install.Ours(u.GetLabels(), install.DefaultNamespace) {
			t.Errorf("%s %s: labels %v", u.GetKind(), u.GetName(), u.GetLabels())
		}
		if u.GetKind() == "Deployment" {
			c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
			if got := strings.Join(args, " "); !strings.HasPrefix(got, "watch --listen :8080 --interval 5m0s") {
				t.Errorf("args %q", got)
			}
			if lim, _, _ := unstructured.NestedString(c[0].(map[string]any), "resources", "limits", "memory"); lim != "150Mi" {
				t.Errorf("memory limit %q", lim)
			}
		}
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceMonitor"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if after := snapshot(t, kc, dc); !reflect.DeepEqual(before, after) {
		t.Errorf("a dry run changed the cluster:\n%v\n%v", before, after)
	}
	for _, a := range kc.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("a dry run sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestInstallUninstall: install then uninstall leaves the cluster as it was, whether install created the
// namespace or found it with an unrelated object in it (which survives, as does a user's own kubeslow rbac
// role); the ServiceMonitor is made only where its CRD is discovered.
func TestInstallUninstall(t *testing.T) {
	userRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: rbac.ReadOnlyRole}}
	for _, tc := range []struct {
		name      string
		crd       bool
		exists    bool
		nodeAgent bool
	}{{"new namespace, no CRD", false, false, false}, {"new namespace, CRD", true, false, false}, {"existing namespace, CRD", true, true, false},
		{"node agent kept", false, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{userRole,
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}
			if tc.exists {
				objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.DefaultNamespace}},
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: install.DefaultNamespace}},
					// Labelled by a kubeslow run, not by install: not ours either.
					&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: install.DefaultNamespace, Labels: kube.RunLabels("r1")}})
			}
			cl, kc, dc := fakeCluster(tc.crd, objs...)
			before := snapshot(t, kc, dc)
			f := testFlags("auto")
			f.nodeAgent, f.agentEvery = tc.nodeAgent, nodeagent.KeptEvery
			o, err := f.options()
			if err != nil {
				t.Fatal(err)
			}
			s, out, errOut := streams()
			if err := f.installWith(context.Background(), s, cl, o); err != nil {
				t.Fatal(err)
			}
			made := len(snapshot(t, kc, dc)) - len(before)
			want := 5 // sa, role, binding, deployment, service
			if !tc.exists {
				want++
			}
			if tc.crd {
				want++
			}
			if tc.nodeAgent {
				want += 3 // the kept agent's DaemonSet, its Role and RoleBinding
				checkKeptAgent(t, kc)
			}
			if made != want {
				t.Errorf("install made %d objects, want %d:\n%s", made, want, out)
			}
			if !tc.crd && !strings.Contains(errOut.String(), "ServiceMonitor skipped: the cluster does not serve monitoring.coreos.com/v1") {
				t.Errorf("no word on the skipped ServiceMonitor: %s", errOut)
			}
			sms, _ := dc.Resource(install.ServiceMonitorGVR).Namespace(install.DefaultNamespace).List(context.Background(), metav1.ListOptions{})
			if got := len(sms.Items); got != map[bool]int{false: 0, true: 1}[tc.crd] {
				t.Errorf("%d ServiceMonitors with CRD %v", got, tc.crd)
			}
			// A second install updates in place.
			s2, out2, _ := streams()
			if err := f.installWith(context.Background(), s2, cl, o); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out2.String(), "created") || !strings.Contains(out2.String(), "updated deployment kubeslow/kubeslow-watch") {
				t.Errorf("second install:\n%s", out2)
			}
			s3, out3, _ := streams()
			if err := uninstallWith(context.Background(), s3, cl, install.DefaultNamespace); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(out3.String(), "deleted "); got != want {
				t.Errorf("uninstall deleted %d, want %d:\n%s", got, want, out3)
			}
			if after := snapshot(t, kc, dc); !reflect.DeepEqual(before, after) {
				t.Errorf("install+uninstall changed the cluster:\nbefore %v\nafter  %v", before, after)
			}
			// Again: nothing left, not an error.
			s4, out4, _ := streams()
			if err := uninstallWith(context.Background(), s4, cl, install.DefaultNamespace); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out4.String(), "nothing to delete") {
				t.Errorf("second uninstall: %s", out4)
			}
		})
	}
}

// checkKeptAgent: the kept agent reads every minute, its labels are the install's (so uninstall finds it),
// the watch is told to read it, and the Role grants its reads in the namespace only.
func checkKeptAgent(t *testing.T, kc *fake.Clientset) {
	t.Helper()
	ctx, ns := context.Background(), install.DefaultNamespace
	ds, err := kc.AppsV1().DaemonSets(ns).Get(ctx, nodeagent.KeptName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--every 1m0s") || !strings.Contains(args, "--window 1m0s") || !install.Ours(ds.Labels, ns) ||
		ds.Spec.Template.Spec.Containers[0].Image != "registry.example/kubeslow:v1" {
		t.Errorf("kept agent: labels %v, image %s, args %s", ds.Labels, ds.Spec.Template.Spec.Containers[0].Image, args)
	}
	dep, err := kc.AppsV1().Deployments(ns).Get(ctx, install.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wargs := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(wargs, "--node-agent "+ns) {
		t.Errorf("the watch is not told to read the kept agent: %s", wargs)
	}
	role, err := kc.RbacV1().Roles(ns).Get(ctx, install.NodeAgentRoleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var res []string
	for _, r := range role.Rules {
		res = append(res, strings.Join(r.Resources, ",")+":"+strings.Join(r.Verbs, ","))
	}
	if got := strings.Join(res, " "); got != "daemonsets:get pods:list pods/log:get" {
		t.Errorf("role rules %s", got)
	}
	rb, err := kc.RbacV1().RoleBindings(ns).Get(ctx, install.NodeAgentRoleName, metav1.GetOptions{})
	if err != nil || rb.RoleRef.Name != install.NodeAgentRoleName || rb.Subjects[0].Name != install.Name {
		t.Errorf("role binding %+v %v", rb, err)
	}
}

// TestInstallRefusesForeign: an object of the install's name that install did not make is not changed.
func TestInstallRefusesForeign(t *testing.T) {
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: install.Name, Namespace: install.DefaultNamespace, Labels: map[string]string{"app": "mine"}}}
	cl, kc, _ := fakeCluster(false, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.DefaultNamespace}}, foreign)
	f := testFlags("no")
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := streams()
	err = f.installWith(context.Background(), s, cl, o)
	if err == nil || !strings.Contains(err.Error(), "not touching it") {
		t.Fatalf("err %v", err)
	}
	got, _ := kc.CoreV1().Services(install.DefaultNamespace).Get(context.Background(), install.Name, metav1.GetOptions{})
	if !reflect.DeepEqual(got.Labels, foreign.Labels) {
		t.Errorf("the foreign Service was changed: %v", got.Labels)
	}
}

// TestForbiddenSaysWhich: a denied request names the permission that is missing.
func TestForbiddenSaysWhich(t *testing.T) {
	cl, kc, _ := fakeCluster(false)
	kc.PrependReactor("create", "clusterroles", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "kubeslow-watch-kubeslow", errors.New("denied"))
	})
	f := testFlags("no")
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := streams()
	err = f.installWith(context.Background(), s, cl, o)
	if err == nil || !strings.Contains(err.Error(), "needs permission to create clusterroles.rbac.authorization.k8s.io cluster-wide") {
		t.Fatalf("err %v", err)
	}
}

func TestInstallFlags(t *testing.T) {
	for name, mod := range map[string]func(*installFlags){
		"bad namespace":       func(f *installFlags) { f.namespace = "Not_A_Name" },
		"bad service-monitor": func(f *installFlags) { f.serviceMonitor = "maybe" },
		"short interval":      func(f *installFlags) { f.interval = time.Second },
		"benchmark only":      func(f *installFlags) { f.only = []string{"pods.startup"} },
	} {
		f := testFlags("auto")
		mod(f)
		if _, err := f.options(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestUninstallOneOfTwo: the cluster-scoped role and binding of an install in another namespace stay.
func TestUninstallOneOfTwo(t *testing.T) {
	cl, kc, dc := fakeCluster(true)
	ctx := context.Background()
	f := testFlags("auto")
	f.namespace = "other"
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := streams()
	if err := f.installWith(ctx, s, cl, o); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, kc, dc)
	f = testFlags("auto")
	if o, err = f.options(); err != nil {
		t.Fatal(err)
	}
	if err := f.installWith(ctx, s, cl, o); err != nil {
		t.Fatal(err)
	}
	if err := uninstallWith(ctx, s, cl, install.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, kc, dc); !reflect.DeepEqual(before, after) {
		t.Errorf("uninstall in %s touched the install in other:\nbefore %v\nafter  %v", install.DefaultNamespace, before, after)
	}
}
