package install

import (
	"context"
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Clients are what install and uninstall use: the typed clientset for the built-in kinds, the dynamic client
// for the ServiceMonitor, and discovery to find whether that CRD exists.
type Clients struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
}

// HasServiceMonitor reports whether the cluster serves monitoring.coreos.com/v1 servicemonitors, and if not,
// why (for the user).
func HasServiceMonitor(d discovery.DiscoveryInterface) (bool, string, error) {
	gv := ServiceMonitorGVR.GroupVersion().String()
	l, err := d.ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return false, "the cluster does not serve " + gv + " (the Prometheus Operator's CRDs are not installed)", nil
	case err != nil:
		return false, "", Explain(err, "discover", "the API group", ServiceMonitorGVR.Group, "", "")
	}
	for _, r := range l.APIResources {
		if r.Name == ServiceMonitorGVR.Resource {
			return true, "", nil
		}
	}
	return false, gv + " is served but has no servicemonitors resource", nil
}

// NamespaceExists reports whether ns exists.
func NamespaceExists(ctx context.Context, c kubernetes.Interface, ns string) (bool, error) {
	_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, Explain(err, "get", "namespaces", "", "", ns)
	}
	return true, nil
}

// Explain turns an API error into what the user needs: for a denied request, the permission that is missing.
func Explain(err error, verb, resource, group, ns, name string) error {
	if err == nil {
		return nil
	}
	res := resource
	if group != "" {
		res += "." + group
	}
	what := describe(resource, ns, name)
	if apierrors.IsForbidden(err) {
		where := "cluster-wide"
		if ns != "" {
			where = "in namespace " + ns
		}
		hint := ""
		if resource == "clusterroles" || resource == "clusterrolebindings" {
			hint = " (granting a ClusterRole also needs every permission it grants, or the escalate/bind verbs: install as a cluster admin)"
		}
		return fmt.Errorf("forbidden: %s %s needs permission to %s %s %s%s: %w", verb, what, verb, res, where, hint, err)
	}
	return fmt.Errorf("%s %s: %w", verb, what, err)
}

// client is a typed client of one kind in one namespace (or cluster-scoped).
type client[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// upsert creates obj, or updates the object of its name if the install made it (keep copies what the
// server owns from the existing object into obj); an object of that name without the install's labels is
// refused, never changed. It returns "created" or "updated".
func upsert[T metav1.Object](ctx context.Context, c client[T], obj T, resource, group, installNS string, keep func(existing, obj T)) (string, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	cur, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubeslow"}); err != nil {
			return "", Explain(err, "create", resource, group, ns, name)
		}
		return "created", nil
	case err != nil:
		return "", Explain(err, "get", resource, group, ns, name)
	}
	if !Ours(cur.GetLabels(), installNS) {
		return "", fmt.Errorf("%s exists and was not made by `kubeslow watch install` in %s (it lacks the labels %s): not touching it",
			describe(resource, ns, name), installNS, Selector(installNS))
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if keep != nil {
		keep(cur, obj)
	}
	if _, err := c.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "kubeslow"}); err != nil {
		return "", Explain(err, "update", resource, group, ns, name)
	}
	return "updated", nil
}

// Apply creates or updates the objects (the Namespace first, when there is one), calling done with each
// ("created deployment kubeslow/kubeslow-watch").
func Apply(ctx context.Context, c Clients, obs *Objects, done func(string)) error {
	ns := obs.Deployment.Namespace
	step := func(verb, kind, ns, name string, err error) error {
		if err == nil {
			done(verb + " " + describe(kind, ns, name))
		}
		return err
	}
	if n := obs.Namespace; n != nil {
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, n.DeepCopy(), metav1.CreateOptions{FieldManager: "kubeslow"})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Made meanwhile, or by an earlier install: it is not marked unless install made it.
		case err != nil:
			return Explain(err, "create", "namespaces", "", "", n.Name)
		default:
			done("created " + describe("namespace", "", n.Name))
		}
	}
	v, err := upsert(ctx, c.Kube.CoreV1().ServiceAccounts(ns), obs.ServiceAccount.DeepCopy(), "serviceaccounts", "", ns, nil)
	if err := step(v, "serviceaccount", ns, obs.ServiceAccount.Name, err); err != nil {
		return err
	}
	v, err = upsert(ctx, c.Kube.RbacV1().ClusterRoles(), obs.ClusterRole.DeepCopy(), "clusterroles", "rbac.authorization.k8s.io", ns, nil)
	if err := step(v, "clusterrole", "", obs.ClusterRole.Name, err); err != nil {
		return err
	}
	v, err = upsert(ctx, c.Kube.RbacV1().ClusterRoleBindings(), obs.Binding.DeepCopy(), "clusterrolebindings", "rbac.authorization.k8s.io", ns, nil)
	if err := step(v, "clusterrolebinding", "", obs.Binding.Name, err); err != nil {
		return err
	}
	if obs.NodeAgent != nil {
		v, err = upsert(ctx, c.Kube.RbacV1().Roles(ns), obs.Role.DeepCopy(), "roles", "rbac.authorization.k8s.io", ns, nil)
		if err := step(v, "role", ns, obs.Role.Name, err); err != nil {
			return err
		}
		v, err = upsert(ctx, c.Kube.RbacV1().RoleBindings(ns), obs.RoleBinding.DeepCopy(), "rolebindings", "rbac.authorization.k8s.io", ns, nil)
		if err := step(v, "rolebinding", ns, obs.RoleBinding.Name, err); err != nil {
			return err
		}
		v, err = upsert(ctx, c.Kube.AppsV1().DaemonSets(ns), obs.NodeAgent.DeepCopy(), "daemonsets", "apps", ns, nil)
		if err := step(v, "daemonset", ns, obs.NodeAgent.Name, err); err != nil {
			return err
		}
	}
	v, err = upsert(ctx, c.Kube.AppsV1().Deployments(ns), obs.Deployment.DeepCopy(), "deployments", "apps", ns, nil)
	if err := step(v, "deployment", ns, obs.Deployment.Name, err); err != nil {
		return err
	}
	svc := obs.Service.DeepCopy()
	v, err = upsert(ctx, c.Kube.CoreV1().Services(ns), svc, "services", "", ns, func(cur, obj *corev1.Service) {
		obj.Spec.ClusterIP, obj.Spec.ClusterIPs = cur.Spec.ClusterIP, cur.Spec.ClusterIPs // allocated by the server
	})
	if err := step(v, "service", ns, obs.Service.Name, err); err != nil {
		return err
	}
	if sm := obs.ServiceMonitor; sm != nil {
		v, err = upsert[*unstructured.Unstructured](ctx, dyn{c.Dynamic.Resource(ServiceMonitorGVR).Namespace(ns)}, sm.DeepCopy(),
			ServiceMonitorGVR.Resource, ServiceMonitorGVR.Group, ns, nil)
		if err := step(v, "servicemonitor", ns, sm.GetName(), err); err != nil {
			return err
		}
	}
	return nil
}

// dyn is a dynamic resource client with the typed clients' method signatures (no subresources).
type dyn struct{ r dynamic.ResourceInterface }

func (d dyn) Get(ctx context.Context, name string, o metav1.GetOptions) (*unstructured.Unstructured, error) {
	return d.r.Get(ctx, name, o)
}

func (d dyn) Create(ctx context.Context, obj *unstructured.Unstructured, o metav1.CreateOptions) (*unstructured.Unstructured, error) {
	return d.r.Create(ctx, obj, o)
}

func (d dyn) Update(ctx context.Context, obj *unstructured.Unstructured, o metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return d.r.Update(ctx, obj, o)
}

func (d dyn) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	return d.r.Delete(ctx, name, o)
}

// deletable is one kind uninstall looks for.
type deletable struct {
	kind     string // for the report
	resource string // for errors
	group    string
	ns       string // "" when cluster-scoped
	list     func(ctx context.Context, opts metav1.ListOptions) ([]string, error)
	del      func(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Uninstall deletes the objects of the install in ns, found by their labels (the cluster-scoped ClusterRole
// and binding included), then the namespace if install created it. It returns what it deleted
// ("deployment kubeslow/kubeslow-watch"); an object already gone is not an error. withMonitor says whether
// the cluster serves ServiceMonitors (they are looked for only then).
func Uninstall(ctx context.Context, c Clients, ns string, withMonitor bool) ([]string, error) {
	names := func(items []metav1.Object) []string {
		var out []string
		for _, it := range items {
			if Ours(it.GetLabels(), ns) { // the selector already says so; checked again before any delete
				out = append(out, it.GetName())
			}
		}
		sort.Strings(out)
		return out
	}
	core, rbac, apps := c.Kube.CoreV1(), c.Kube.RbacV1(), c.Kube.AppsV1()
	kinds := []deletable{
		{"servicemonitor", ServiceMonitorGVR.Resource, ServiceMonitorGVR.Group, ns,
			lister(c.Dynamic.Resource(ServiceMonitorGVR).Namespace(ns).List, func(l *unstructured.UnstructuredList) []metav1.Object {
				var items []metav1.Object
				for i := range l.Items {
					items = append(items, &l.Items[i])
				}
				return items
			}, names), dyn{c.Dynamic.Resource(ServiceMonitorGVR).Namespace(ns)}.Delete},
		{"service", "services", "", ns, lister(core.Services(ns).List, func(l *corev1.ServiceList) []metav1.Object { return Objs(l.Items) }, names),
			core.Services(ns).Delete},
		{"daemonset", "daemonsets", "apps", ns, lister(apps.DaemonSets(ns).List, func(l *appsv1.DaemonSetList) []metav1.Object { return Objs(l.Items) }, names),
			apps.DaemonSets(ns).Delete},
		{"deployment", "deployments", "apps", ns, lister(apps.Deployments(ns).List, func(l *appsv1.DeploymentList) []metav1.Object { return Objs(l.Items) }, names),
			apps.Deployments(ns).Delete},
		{"rolebinding", "rolebindings", "rbac.authorization.k8s.io", ns,
			lister(rbac.RoleBindings(ns).List, func(l *rbacv1.RoleBindingList) []metav1.Object { return Objs(l.Items) }, names), rbac.RoleBindings(ns).Delete},
		{"role", "roles", "rbac.authorization.k8s.io", ns,
			lister(rbac.Roles(ns).List, func(l *rbacv1.RoleList) []metav1.Object { return Objs(l.Items) }, names), rbac.Roles(ns).Delete},
		{"clusterrolebinding", "clusterrolebindings", "rbac.authorization.k8s.io", "",
			lister(rbac.ClusterRoleBindings().List, func(l *rbacv1.ClusterRoleBindingList) []metav1.Object { return Objs(l.Items) }, names),
			rbac.ClusterRoleBindings().Delete},
		{"clusterrole", "clusterroles", "rbac.authorization.k8s.io", "",
			lister(rbac.ClusterRoles().List, func(l *rbacv1.ClusterRoleList) []metav1.Object { return Objs(l.Items) }, names), rbac.ClusterRoles().Delete},
		{"serviceaccount", "serviceaccounts", "", ns,
			lister(core.ServiceAccounts(ns).List, func(l *corev1.ServiceAccountList) []metav1.Object { return Objs(l.Items) }, names),
			core.ServiceAccounts(ns).Delete},
	}
	if !withMonitor {
		kinds = kinds[1:]
	}
	var deleted []string
	bg := metav1.DeletePropagationBackground
	for _, k := range kinds {
		found, err := k.list(ctx, metav1.ListOptions{LabelSelector: Selector(ns)})
		if err != nil {
			return deleted, Explain(err, "list", k.resource, k.group, k.ns, "")
		}
		for _, name := range found {
			err := k.del(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
			switch {
			case apierrors.IsNotFound(err): // gone meanwhile
			case err != nil:
				return deleted, Explain(err, "delete", k.resource, k.group, k.ns, name)
			default:
				deleted = append(deleted, describe(k.kind, k.ns, name))
			}
		}
	}
	n, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return deleted, nil
	case err != nil:
		return deleted, Explain(err, "get", "namespaces", "", "", ns)
	}
	if !Ours(n.Labels, ns) || n.Annotations[CreatedAnnotation] != RunValue || n.DeletionTimestamp != nil {
		return deleted, nil // not made by install (or already going): kept
	}
	err = core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &bg})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return deleted, Explain(err, "delete", "namespaces", "", "", ns)
	default:
		deleted = append(deleted, describe("namespace", "", ns))
	}
	return deleted, nil
}

// lister is a deletable's list: list's items (by items) named by names.
func lister[L any](list func(context.Context, metav1.ListOptions) (L, error), items func(L) []metav1.Object,
	names func([]metav1.Object) []string) func(context.Context, metav1.ListOptions) ([]string, error) {
	return func(ctx context.Context, o metav1.ListOptions) ([]string, error) {
		l, err := list(ctx, o)
		if err != nil {
			return nil, err
		}
		return names(items(l)), nil
	}
}

// Objs is a list's items as metav1.Objects.
func Objs[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// ErrNoImage is returned by the CLI when no image is known.
var ErrNoImage = errors.New("no kubeslow image: a development build has no default; push one with `kubeslow image push REF` and pass --image REF")
