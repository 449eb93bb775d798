package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab/build"
	"github.com/kubeslow/kubeslow/internal/lab/images"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// The lab's ingress controllers (Config.Ingress).
const (
	// IngressTraefik: Traefik v3 (the version K3S ships, built from the module proxy) as a Deployment on real node
	// 1 with its kubernetesingress provider (Ingress objects, no CRDs), reached on TraefikNodePort of that node.
	IngressTraefik = "traefik"
)

// Ingresses lists the values of --ingress.
var Ingresses = []string{IngressTraefik}

// Traefik is Traefik's component name; TraefikVersion its pinned version.
const (
	Traefik        = build.Traefik
	TraefikVersion = build.TraefikVersion
)

// Traefik's objects and addresses on the lab.
const (
	// TraefikImage is the lab's Traefik binary at /traefik.
	TraefikImage     = "kubeslow.local/traefik:lab"
	TraefikNamespace = "kube-system"
	TraefikName      = "traefik"
	// TraefikNodePort is the web entry point's node port (externalTrafficPolicy Local: on Traefik's node only).
	TraefikNodePort = 30080
	// IngressClassName is Traefik's IngressClass (the default class), with Traefik's controller name.
	IngressClassName  = "traefik"
	TraefikController = "traefik.io/ingress-controller"
	// IngressTestPath is the test Ingress's path, to the Service ingress-test in the default namespace (kubeslow's
	// agent server, which answers every request 404 with an empty body).
	IngressTestPath = "/ingress-test"
	ingressTestName = "ingress-test"
	// Traefik's entry points in its pod: web (HTTP), traefik (ping), metrics (Prometheus, as K3S's chart enables).
	traefikWebPort     = 8000
	traefikPingPort    = 9000
	traefikMetricsPort = 9100
	ingressTestPort    = 8080
)

// traefikLabels are the labels of Traefik's pods and Service, as K3S's chart sets them (discovery finds the
// controller's Service by app.kubernetes.io/name).
var traefikLabels = map[string]string{"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-kube-system"}

// TraefikNodeIndex is the real node Traefik runs on.
const TraefikNodeIndex = 1

// TraefikURL is the ingress's address from the host (and from the nodes): real node 1's address and the node port.
func TraefikURL() string {
	return fmt.Sprintf("http://%s:%d", RealNodeIP(TraefikNodeIndex), TraefikNodePort)
}

// validateIngress checks --ingress.
func validateIngress(c *Config) error {
	switch c.Ingress {
	case "":
		return nil
	case IngressTraefik:
		if c.RealNodes == 0 {
			return errors.New("--ingress traefik needs real nodes (--real-nodes): Traefik runs as a Deployment on real node 1")
		}
		return nil
	}
	return fmt.Errorf("--ingress %q: want %s (or none)", c.Ingress, strings.Join(Ingresses, ", "))
}

// traefikArgs are Traefik's static configuration: K3S's chart's entry points (web on 8000, metrics on 9100 with
// Prometheus metrics on, as K3S ships it), the ping endpoint for the readiness probe, the Ingress provider only
// (no CRDs), and nothing that calls out of the lab.
func traefikArgs() []string {
	return []string{
		"--global.checknewversion=false",
		"--global.sendanonymoususage=false",
		fmt.Sprintf("--entryPoints.web.address=:%d/tcp", traefikWebPort),
		fmt.Sprintf("--entryPoints.traefik.address=:%d/tcp", traefikPingPort),
		fmt.Sprintf("--entryPoints.metrics.address=:%d/tcp", traefikMetricsPort),
		"--metrics.prometheus=true",
		"--metrics.prometheus.entryPoint=metrics",
		"--ping=true",
		"--ping.entryPoint=traefik",
		"--providers.kubernetesingress=true",
		"--log.level=WARN",
	}
}

// traefikRole is what Traefik's kubernetesingress provider reads and writes (its client watches Ingresses,
// Services, EndpointSlices and Secrets in the watched namespaces, IngressClasses and Nodes cluster-wide, and
// updates Ingress status), as Traefik's documentation's RBAC for the provider grants it.
func traefikRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-lab:traefik"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "secrets", "nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"extensions", "networking.k8s.io"}, Resources: []string{"ingresses", "ingressclasses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"extensions", "networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
	}}
}

// traefikDeployment runs one Traefik on real node 1.
func traefikDeployment() *appsv1.Deployment {
	spec := corev1.PodSpec{
		ServiceAccountName: TraefikName,
		NodeSelector:       map[string]string{corev1.LabelHostname: RealNodeName(TraefikNodeIndex)},
		Containers: []corev1.Container{{
			Name: "traefik", Image: TraefikImage, ImagePullPolicy: corev1.PullNever, Args: traefikArgs(),
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: traefikWebPort}, {Name: "traefik", ContainerPort: traefikPingPort},
				{Name: "metrics", ContainerPort: traefikMetricsPort}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ping", Port: intstr.FromInt32(traefikPingPort)}},
				PeriodSeconds: 1},
		}},
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: TraefikName, Namespace: TraefikNamespace, Labels: traefikLabels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: traefikLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: traefikLabels}, Spec: spec}}}
}

// traefikService exposes the web entry point on TraefikNodePort of Traefik's node (externalTrafficPolicy Local:
// no second hop to another node and no SNAT, so the client's address reaches Traefik).
func traefikService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: TraefikName, Namespace: TraefikNamespace, Labels: traefikLabels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector: traefikLabels,
			Ports: []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromString("web"), NodePort: TraefikNodePort},
				{Name: "metrics", Port: traefikMetricsPort, TargetPort: intstr.FromString("metrics")}}}}
}

// ingressTestObjects are the test backend (kubeslow's agent server on a real node), its Service and the Ingress
// to it at IngressTestPath.
func ingressTestObjects() (*appsv1.Deployment, *corev1.Service, *networkingv1.Ingress) {
	labels := map[string]string{"app.kubernetes.io/name": ingressTestName}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: ingressTestName, Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector: map[string]string{RealNodeLabel: "real"},
				Containers: []corev1.Container{{Name: "serve", Image: AgentImage, ImagePullPolicy: corev1.PullNever,
					Args:  agentproto.Serve{Listen: fmt.Sprintf("0.0.0.0:%d", ingressTestPort)}.Args(),
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: ingressTestPort}}}}}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ingressTestName, Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: ingressTestName, Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(IngressClassName), Rules: []networkingv1.IngressRule{{
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: IngressTestPath, PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: ingressTestName, Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}}}
	return dep, svc, ing
}

// ensureTraefik creates Traefik's ServiceAccount, RBAC, IngressClass, Deployment and Service and the test
// backend with its Ingress, then waits until a request to TraefikURL()+IngressTestPath is answered by the test
// backend through Traefik.
func ensureTraefik(ctx context.Context, c kubernetes.Interface) error {
	meta := metav1.ObjectMeta{Name: TraefikName, Namespace: TraefikNamespace}
	role := traefikRole()
	dep, svc, ing := ingressTestObjects()
	steps := []struct {
		what string
		do   func() error
	}{
		{"ServiceAccount", func() error {
			return created(c.CoreV1().ServiceAccounts(TraefikNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}))
		}},
		{"ClusterRole", func() error { return created(c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})) }},
		{"ClusterRoleBinding", func() error {
			return created(c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: TraefikName, Namespace: TraefikNamespace}}}, metav1.CreateOptions{}))
		}},
		{"IngressClass", func() error {
			return created(c.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: IngressClassName,
				Labels: traefikLabels, Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
				Spec: networkingv1.IngressClassSpec{Controller: TraefikController}}, metav1.CreateOptions{}))
		}},
		{"Deployment", func() error {
			return created(c.AppsV1().Deployments(TraefikNamespace).Create(ctx, traefikDeployment(), metav1.CreateOptions{}))
		}},
		{"Service", func() error {
			return created(c.CoreV1().Services(TraefikNamespace).Create(ctx, traefikService(), metav1.CreateOptions{}))
		}},
		{"test Deployment", func() error {
			return created(c.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{}))
		}},
		{"test Service", func() error {
			return created(c.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}))
		}},
		{"test Ingress", func() error {
			return created(c.NetworkingV1().Ingresses(ing.Namespace).Create(ctx, ing, metav1.CreateOptions{}))
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("traefik's %s: %w", s.what, err)
		}
	}
	return waitIngressRoute(ctx, c, TraefikURL()+IngressTestPath)
}

// waitIngressRoute waits until url is answered by kubeslow's agent server behind the ingress: 404 with an empty
// body. Traefik answers a path it has no route for with its own 404, whose body is "404 page not found", and a
// route with no ready endpoint with 503; so only the backend's empty 404 shows the whole chain works.
func waitIngressRoute(ctx context.Context, c kubernetes.Interface, url string) error {
	err := agentproto.WaitServed(ctx, url, 3*time.Minute)
	if err != nil {
		state := ""
		if dep, gerr := c.AppsV1().Deployments(TraefikNamespace).Get(ctx, TraefikName, metav1.GetOptions{}); gerr == nil {
			state = fmt.Sprintf(" (Traefik's Deployment: %d of %d available)", dep.Status.AvailableReplicas, ptr.Deref(dep.Spec.Replicas, 1))
		}
		return fmt.Errorf("waiting for the test backend through Traefik%s: %w", state, err)
	}
	return nil
}

// traefikImages is Traefik's image for the lab images' archive, with --ingress traefik.
func traefikImages(c *Config, bin func(string) string) []images.Extra {
	if c.Ingress != IngressTraefik {
		return nil
	}
	return []images.Extra{{Ref: TraefikImage, Binary: bin(Traefik), Path: "/traefik", Entrypoint: []string{"/traefik"}}}
}

// traefikStep deploys Traefik and the test Ingress once the real nodes are up.
func traefikStep() Step {
	return Step{Name: "ingress", What: fmt.Sprintf("Traefik v%s (%s) as Deployment %s/%s on %s with its RBAC and the default IngressClass %s "+
		"(controller %s), Service %s NodePort %d (externalTrafficPolicy Local); a test backend, Service and Ingress %s in %s answered through it at %s",
		TraefikVersion, TraefikImage, TraefikNamespace, TraefikName, RealNodeName(TraefikNodeIndex), IngressClassName, TraefikController, TraefikName,
		TraefikNodePort, IngressTestPath, metav1.NamespaceDefault, TraefikURL()+IngressTestPath),
		Do: func(ctx context.Context, u *upRun) error {
			if err := ensureTraefik(ctx, u.client); err != nil {
				return err
			}
			u.step("Traefik v%s up: %s answered by the test backend through it", TraefikVersion, TraefikURL()+IngressTestPath)
			return nil
		}}
}
