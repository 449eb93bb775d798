// Package install is `kubeslow watch install` and `uninstall`: the objects that run `kubeslow watch` in the
// cluster (a ServiceAccount bound to the read-only ClusterRole, a Deployment, its Service and, where the
// Prometheus Operator is installed, a ServiceMonitor), applied with create-or-update and deleted by their
// labels. Nothing without those labels is ever changed or deleted.
package install

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Names and labels of the installed objects.
const (
	// Name is the ServiceAccount's, the Deployment's, the Service's and the ServiceMonitor's name.
	Name = "kubeslow-watch"
	// DefaultNamespace is where install puts them unless --namespace says otherwise.
	DefaultNamespace = "kubeslow"
	// RunValue is the kube.RunLabel value of every installed object: a fixed identity, not a run's ID.
	RunValue = kube.InstalledRun
	// NamespaceLabel names the namespace an object belongs to, so the cluster-scoped roles and bindings of
	// one install are told from another's.
	NamespaceLabel = "kubeslow.dev/watch-namespace"
	// CreatedAnnotation on a namespace says install created it (so uninstall may delete it).
	CreatedAnnotation = "kubeslow.dev/created-by"
	// Port is the watch's HTTP port in the pod, and the Service's, named PortName.
	Port     = 8080
	PortName = "metrics"
	// MemoryLimit is the Deployment's memory limit (issue 41's bound for a watch).
	MemoryLimit = "150Mi"
	// uid is the non-root user the watch runs as (the image holds only the static binary, readable by all).
	uid = 65532
)

// ServiceMonitorGVR is the Prometheus Operator's ServiceMonitor.
var ServiceMonitorGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

// Options are what install builds.
type Options struct {
	Namespace string
	// Image holds the kubeslow binary at /kubeslow (its entrypoint).
	Image string
	// WatchArgs are the arguments after `watch` (--listen is added).
	WatchArgs []string
	// ReadOnlyRules are the rules of `kubeslow rbac`'s read-only ClusterRole.
	ReadOnlyRules []rbacv1.PolicyRule
	// ServiceMonitor adds the ServiceMonitor.
	ServiceMonitor bool
	// CreateNamespace adds the Namespace (it does not exist yet).
	CreateNamespace bool
	// NodeAgent is the node agent DaemonSet kept running in the namespace (nil: none), whose reports the watch
	// reads with NodeAgentRules, granted in the namespace by a Role.
	NodeAgent      *appsv1.DaemonSet
	NodeAgentRules []rbacv1.PolicyRule
}

// Objects are the objects of one install, in the order they are applied.
type Objects struct {
	Namespace      *corev1.Namespace // nil when the namespace exists already
	ServiceAccount *corev1.ServiceAccount
	ClusterRole    *rbacv1.ClusterRole
	Binding        *rbacv1.ClusterRoleBinding
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
	ServiceMonitor *unstructured.Unstructured // nil without the Prometheus Operator
	// The kept node agent and the Role (and binding) to read it: nil without Options.NodeAgent.
	NodeAgent   *appsv1.DaemonSet
	Role        *rbacv1.Role
	RoleBinding *rbacv1.RoleBinding
}

// Labels are every installed object's labels (kubeslow's managed-by and run labels, and the namespace).
func Labels(ns string) map[string]string {
	return map[string]string{kube.ManagedByLabel: kube.ManagedByValue, kube.RunLabel: RunValue, NamespaceLabel: ns}
}

// Selector selects the objects of the install in ns.
func Selector(ns string) string { return labels.SelectorFromSet(Labels(ns)).String() }

// Ours reports whether an object with these labels was made by the install in ns.
func Ours(l map[string]string, ns string) bool {
	for k, v := range Labels(ns) {
		if l[k] != v {
			return false
		}
	}
	return true
}

// NodeAgentRoleName is the namespaced Role's (and its binding's) name: reading the kept node agent.
const NodeAgentRoleName = Name + "-node-agent"

// RoleName is the ClusterRole's and the ClusterRoleBinding's name for the install in ns (one per namespace,
// and not `kubeslow rbac`'s own name, so a role a user applied from it is never taken over).
func RoleName(ns string) string { return Name + "-" + ns }

// podLabels select the watch's pods (they carry no managed-by label: the ReplicaSet makes them).
func podLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/component": "watch"}
}

func meta(name, ns string) metav1.ObjectMeta {
	l := Labels(ns)
	for k, v := range podLabels() {
		l[k] = v
	}
	if name == "" { // cluster-scoped
		return metav1.ObjectMeta{Name: RoleName(ns), Labels: l}
	}
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l}
}

// Build returns the objects of an install.
func Build(o Options) (*Objects, error) {
	switch {
	case o.Namespace == "":
		return nil, errors.New("no namespace")
	case o.Image == "":
		return nil, errors.New("no image")
	case len(o.ReadOnlyRules) == 0:
		return nil, errors.New("no read-only rules")
	}
	ns := o.Namespace
	obs := &Objects{}
	if o.CreateNamespace {
		m := meta("", ns)
		m.Name = ns
		m.Annotations = map[string]string{CreatedAnnotation: RunValue}
		obs.Namespace = &corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: m}
	}
	obs.ServiceAccount = &corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(Name, ns)}
	obs.ClusterRole = &rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta("", ns),
		Rules: append([]rbacv1.PolicyRule(nil), o.ReadOnlyRules...)}
	obs.Binding = &rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta("", ns),
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: RoleName(ns)},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: ns}}}
	one, yes, no := int32(1), true, false
	nonRoot := int64(uid)
	probe := func(delay, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(PortName)}},
			InitialDelaySeconds: delay, PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: 3}
	}
	args := append([]string{"watch", "--listen", ":" + strconv.Itoa(Port)}, o.WatchArgs...)
	obs.Deployment = &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: meta(Name, ns),
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: podLabels()},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, // one watch at a time
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name, AutomountServiceAccountToken: &yes,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &nonRoot, RunAsGroup: &nonRoot,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					Containers: []corev1.Container{{
						Name: "watch", Image: o.Image, ImagePullPolicy: corev1.PullIfNotPresent, Args: args,
						Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: Port, Protocol: corev1.ProtocolTCP}},
						// A cycle takes the --window and more: liveness only asks that the process serves.
						LivenessProbe: probe(10, 20), ReadinessProbe: probe(2, 10),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse(MemoryLimit)}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
				},
			},
		}}
	if o.NodeAgent != nil {
		ds := o.NodeAgent.DeepCopy()
		ds.TypeMeta, ds.Namespace = tm("apps/v1", "DaemonSet"), ns
		obs.NodeAgent = ds
		obs.Role = &rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(NodeAgentRoleName, ns),
			Rules: append([]rbacv1.PolicyRule(nil), o.NodeAgentRules...)}
		obs.RoleBinding = &rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(NodeAgentRoleName, ns),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: NodeAgentRoleName},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: ns}}}
	}
	obs.Service = &corev1.Service{TypeMeta: tm("v1", "Service"), ObjectMeta: meta(Name, ns),
		Spec: corev1.ServiceSpec{Selector: podLabels(), Ports: []corev1.ServicePort{
			{Name: PortName, Port: Port, TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP}}}}
	if o.ServiceMonitor {
		m := meta(Name, ns)
		sm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
			"spec": map[string]any{
				"selector":          map[string]any{"matchLabels": toAny(m.Labels)},
				"namespaceSelector": map[string]any{"matchNames": []any{ns}},
				"endpoints":         []any{map[string]any{"port": PortName, "path": "/metrics", "interval": "60s"}},
			}}}
		sm.SetName(Name)
		sm.SetNamespace(ns)
		sm.SetLabels(m.Labels)
		obs.ServiceMonitor = sm
	}
	return obs, nil
}

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// List is the objects in apply order.
func (obs *Objects) List() []runtime.Object {
	var l []runtime.Object
	if obs.Namespace != nil {
		l = append(l, obs.Namespace)
	}
	l = append(l, obs.ServiceAccount, obs.ClusterRole, obs.Binding)
	if obs.NodeAgent != nil {
		l = append(l, obs.Role, obs.RoleBinding, obs.NodeAgent)
	}
	l = append(l, obs.Deployment, obs.Service)
	if obs.ServiceMonitor != nil {
		l = append(l, obs.ServiceMonitor)
	}
	return l
}

// WriteYAML writes the objects as one multi-document YAML stream (for kubectl apply -f -).
func (obs *Objects) WriteYAML(w io.Writer) error {
	var b strings.Builder
	for i, o := range obs.List() {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		delete(u, "status")
		if m, ok := u["metadata"].(map[string]any); ok {
			delete(m, "creationTimestamp")
		}
		if t, ok := nested(u, "spec", "template", "metadata"); ok {
			delete(t, "creationTimestamp")
		}
		y, err := yaml.Marshal(u)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func nested(u map[string]any, path ...string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := u[p].(map[string]any)
		if !ok {
			return nil, false
		}
		u = next
	}
	return u, true
}

// describe names an object for the user: "deployment kubeslow/kubeslow-watch".
func describe(kind, ns, name string) string {
	if ns == "" {
		return strings.ToLower(kind) + " " + name
	}
	return strings.ToLower(kind) + " " + ns + "/" + name
}

// String lists the objects, one per line.
func (obs *Objects) String() string {
	var l []string
	for _, o := range obs.List() {
		m, _ := objMeta(o)
		l = append(l, describe(o.GetObjectKind().GroupVersionKind().Kind, m.GetNamespace(), m.GetName()))
	}
	return strings.Join(l, "\n")
}

func objMeta(o runtime.Object) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", o)
	}
	return m, nil
}
