package labtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/pki"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ViewUser is the identity ViewerKubeconfig gives exactly `kubeslow rbac`'s grants and the built-in view role.
const ViewUser = "kubeslow-viewer"

// ViewerKubeconfig issues ViewUser's client certificate from the lab's CA, applies rbacYAML (`kubeslow rbac`'s
// output: its two ClusterRoles) as the admin, binds ViewUser to view and to those roles, checks the user is no
// admin, and returns its kubeconfig. The roles and bindings it made are deleted when the test ends (the lab may
// serve the tests after it).
func ViewerKubeconfig(ctx context.Context, t *testing.T, d lab.Dirs, server string, admin kubernetes.Interface, rbacYAML string) string {
	t.Helper()
	if err := pki.EnsureCert(d.PKIDir(), pki.Cert{Name: ViewUser, CN: ViewUser}); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	if err := pki.WriteKubeconfig(d.PKIDir(), kc, server, ViewUser); err != nil {
		t.Fatal(err)
	}
	roles := []string{"view"}
	for _, doc := range strings.Split(rbacYAML, "---\n") {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
			t.Fatalf("rbac output: %v\n%s", err, doc)
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
			t.Fatalf("applying ClusterRole %s: %v", r.Name, err)
		}
		t.Cleanup(func() { deleteOwn(t, "ClusterRole "+r.Name, admin.RbacV1().ClusterRoles().Delete, r.Name) })
		roles = append(roles, r.Name)
	}
	if len(roles) != 3 {
		t.Fatalf("rbac printed %d roles, want 2", len(roles)-1)
	}
	for _, role := range roles {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ViewUser + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ViewUser}}}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			deleteOwn(t, "ClusterRoleBinding "+crb.Name, admin.RbacV1().ClusterRoleBindings().Delete, crb.Name)
		})
	}
	// The user is who the certificate says, and holds no more than that: no Secrets, no role bindings.
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	viewer := kubernetes.NewForConfigOrDie(rc)
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "delete", Resource: "nodes"},
	} {
		ssar, err := viewer.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ssar.Status.Allowed {
			t.Fatalf("%s may %s %s: not a view-only user", ViewUser, ra.Verb, ra.Resource)
		}
	}
	if _, err := viewer.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("%s cannot list nodes with the printed grants: %v", ViewUser, err)
	}
	return kc
}

// CheckViewerRun checks the report and stderr of `kubeslow run` as ViewUser: the preflight skipped nothing, no
// result speaks of a permission, every read-only measurement (readOnly) was measured but those outOfReach (what
// no node of the layout can reach, which no permission would give), and nothing of the run is left but its
// namespace on its way out (its DaemonSets, ClusterRoleBindings and namespaces, seen by admin).
func CheckViewerRun(ctx context.Context, t *testing.T, rep *result.Report, errOut string, readOnly func(name string) bool, outOfReach map[string]bool, admin kubernetes.Interface) {
	t.Helper()
	if strings.Contains(errOut, "will be skipped") {
		t.Errorf("the preflight skipped measurements for %s:\n%s", ViewUser, errOut)
	}
	for _, r := range rep.Results {
		texts := []string{r.Reason}
		for _, o := range r.OutOfReach {
			texts = append(texts, o.Why, o.Fix)
		}
		if why := PermissionWords(texts...); why != "" {
			t.Errorf("%s (%s) speaks of a permission (%q): %s %+v", r.Name, r.Status, why, r.Reason, r.OutOfReach)
		}
		// A read-only check has no reason but a permission to fail on a healthy lab; a benchmark may
		// also meet the machine (a node's DiskPressure on a full host disk, a DNS answer late under
		// load), which the tests of the healthy labs judge: here it only must not speak of a permission.
		switch {
		case r.Status.Measured() || outOfReach[r.Name]:
		case readOnly(r.Name):
			t.Errorf("%s not measured as %s: %s %s", r.Name, ViewUser, r.Status, r.Reason)
		default:
			t.Logf("%s not measured (not for a permission): %s %s", r.Name, r.Status, r.Reason)
		}
	}
	sel := metav1.ListOptions{LabelSelector: kube.Selector("").String()}
	if ds, err := admin.AppsV1().DaemonSets("").List(ctx, sel); err != nil || len(ds.Items) > 0 {
		t.Errorf("DaemonSets left: %v %d", err, len(ds.Items))
	}
	if crb, err := admin.RbacV1().ClusterRoleBindings().List(ctx, sel); err != nil || len(crb.Items) > 0 {
		t.Errorf("ClusterRoleBindings left: %v %d", err, len(crb.Items))
	}
	AssertNoRunNamespaces(ctx, t, admin)
}

// AssertNoRunNamespaces fails the test for each namespace of a kubeslow run (kubeslow-*) not being deleted (a
// run's namespace is gone or going: namespace deletion is asynchronous, its pods finalised by the kubelet after
// the command returns).
func AssertNoRunNamespaces(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "kubeslow-") && ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s left behind", ns.Name)
		}
	}
}

// PermissionWords returns the first word of texts that says a permission was refused ("" when none).
func PermissionWords(texts ...string) string {
	for _, s := range texts {
		l := strings.ToLower(s)
		for _, w := range []string{"forbidden", "no permission", "kubeslow rbac", "unauthorized", " 403", "(403", "permission denied"} {
			if strings.Contains(l, w) {
				return w
			}
		}
	}
	return ""
}

// deleteOwn deletes the cluster-scoped object name the test created, with del (a typed client's Delete); an
// error but NotFound fails the test.
func deleteOwn(t *testing.T, what string, del func(context.Context, string, metav1.DeleteOptions) error, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", what, err)
	}
}
