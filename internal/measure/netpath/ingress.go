package netpath

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/measure"
)

// The ingress paths (case D's client -> ingress -> Service -> pod): a host-network client on node B sends to the
// ingress controller's node port on node A; the controller proxies to the run's server pod on its own node A
// (srv-pod) or on node B (srv-pod-b), each behind its own Service and Ingress path.

// ingressControllerNames are the app.kubernetes.io/name labels of the ingress controllers' Services that
// discovery recognises: Traefik (K3S's, and the lab's with --ingress traefik) and ingress-nginx.
var ingressControllerNames = []string{"traefik", "ingress-nginx", "rke2-ingress-nginx"}

// ingressTarget is an ingress controller reachable on a node port of the node its (one ready) pod runs on.
type ingressTarget struct {
	Class            string // the IngressClass the run's Ingresses name
	Namespace, Name  string // the controller's Service
	Port             string // its HTTP port's name (for the route check through the API server's proxy)
	NodePort         int
	Node             string // where the controller's ready endpoint runs
	ExternalTraffic  string // the Service's externalTrafficPolicy
	ControllerString string // the IngressClass's controller
}

// findIngress finds the cluster's default (or only) IngressClass and a Service of a recognised ingress
// controller with an HTTP node port and one ready endpoint on one of nodes. A cluster without one is a reason
// (the ingress paths are left out), not an error.
func findIngress(ctx context.Context, c kubernetes.Interface, nodes []string) (ingressTarget, string, error) {
	var t ingressTarget
	classes, err := c.NetworkingV1().IngressClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return t, "", fmt.Errorf("listing IngressClasses: %w", err)
	}
	var cls *networkingv1.IngressClass
	for i := range classes.Items {
		if classes.Items[i].Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			cls = &classes.Items[i]
			break
		}
	}
	if cls == nil && len(classes.Items) == 1 {
		cls = &classes.Items[0]
	}
	if cls == nil {
		return t, fmt.Sprintf("no ingress paths: %d IngressClasses and none is the default", len(classes.Items)), nil
	}
	t.Class, t.ControllerString = cls.Name, cls.Spec.Controller
	svcs, err := c.CoreV1().Services("").List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name in (" + strings.Join(ingressControllerNames, ",") + ")"})
	if err != nil {
		return t, "", fmt.Errorf("listing the ingress controller's Service: %w", err)
	}
	var reasons []string
	for _, s := range svcs.Items {
		if s.Spec.Type != corev1.ServiceTypeNodePort && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			reasons = append(reasons, fmt.Sprintf("%s/%s is %s (no node port)", s.Namespace, s.Name, s.Spec.Type))
			continue
		}
		i := slices.IndexFunc(s.Spec.Ports, func(p corev1.ServicePort) bool {
			return p.NodePort > 0 && p.Protocol != corev1.ProtocolUDP && (p.Name == "web" || p.Name == "http" || p.Port == 80)
		})
		if i < 0 {
			reasons = append(reasons, fmt.Sprintf("%s/%s has no HTTP node port (web, http or 80)", s.Namespace, s.Name))
			continue
		}
		node, err := readyEndpointNode(ctx, c, s.Namespace, s.Name, nodes)
		if err != nil {
			return t, "", err
		}
		if node == "" {
			reasons = append(reasons, fmt.Sprintf("%s/%s has no ready endpoint on a real node", s.Namespace, s.Name))
			continue
		}
		p := s.Spec.Ports[i]
		t.Namespace, t.Name, t.Port, t.NodePort, t.Node, t.ExternalTraffic = s.Namespace, s.Name, p.Name, int(p.NodePort), node, string(s.Spec.ExternalTrafficPolicy)
		return t, "", nil
	}
	if len(reasons) == 0 {
		reasons = []string{"no Service labelled app.kubernetes.io/name=" + strings.Join(ingressControllerNames, "|")}
	}
	return t, fmt.Sprintf("no ingress paths: IngressClass %s (%s), but %s", t.Class, t.ControllerString, strings.Join(reasons, "; ")), nil
}

// readyEndpointNode is the node of the Service's first ready endpoint that is on one of nodes ("" if none).
func readyEndpointNode(ctx context.Context, c kubernetes.Interface, ns, svc string, nodes []string) (string, error) {
	l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return "", fmt.Errorf("listing %s/%s's EndpointSlices: %w", ns, svc, err)
	}
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Conditions.Ready, false) && e.NodeName != nil && slices.Contains(nodes, *e.NodeName) {
				return *e.NodeName, nil
			}
		}
	}
	return "", nil
}

// IngressPath is the path prefix of the run's Ingress to a server Service.
func IngressPath(runID, svc string) string { return "/kubeslow-" + runID + "-" + svc }

// ingressFor routes IngressPath(runID, svc) on class to the run's Service svc (HTTP port).
func ingressFor(meta metav1.ObjectMeta, class, runID, svc string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(class),
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: IngressPath(runID, svc), PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: httpPort}}}}}}}}}}}
}

// errNoRoute: the controller answered, but not with the backend's answer.
var errNoRoute = errors.New("not yet routed to the backend")

// RouteAnswer tells whether an answer through the ingress came from kubeslow's agent server (404 with an empty
// body) rather than from the controller itself: Traefik answers a path it has no route for 404 with the body
// "404 page not found", ingress-nginx with an HTML page, and a route with no ready endpoint 502/503 (pure).
func RouteAnswer(status int, body []byte) error {
	if status == 404 && len(body) == 0 {
		return nil
	}
	b := strings.TrimSpace(string(body))
	if len(b) > 60 {
		b = b[:60] + "..."
	}
	return fmt.Errorf("%w: %d %q", errNoRoute, status, b)
}

// waitRoute waits until a GET of path through the controller's Service (the API server's service proxy, which
// dials a controller pod) reaches the backend, so that no benchmark second is spent on the controller's own
// 404s while it loads the new Ingress.
func waitRoute(ctx context.Context, c kubernetes.Interface, t ingressTarget, path string, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var status int
		raw := c.CoreV1().RESTClient().Get().Namespace(t.Namespace).Resource("services").SubResource("proxy").
			Name(t.Name + ":" + t.Port).Suffix(path).Do(ctx).StatusCode(&status)
		body, err := raw.Raw()
		if err != nil && status == 0 {
			if apierrors.IsForbidden(err) {
				return false, err
			}
			last = err
			return false, nil
		}
		last = RouteAnswer(status, body)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("GET %s through %s/%s: %v (last: %v)", path, t.Namespace, t.Name, err, last)
	}
	return nil
}

// ingresses creates the run's Ingress to srv and, with two nodes, the Service srv-b (selecting srv-pod-b) and
// its Ingress; a failure is the reason the ingress paths are left out ("" when all were made).
func (m *Measurement) ingresses(ctx context.Context, env *measure.Env, t ingressTarget, otherNode bool) string {
	backends := []string{"srv"}
	if otherNode {
		backends = append(backends, "srv-b")
		_, err := env.Client.CoreV1().Services(env.Namespace).Create(ctx, &corev1.Service{ObjectMeta: kube.ObjectMeta("srv-b", env.Namespace, env.RunID),
			Spec: corev1.ServiceSpec{Selector: map[string]string{"kubeslow.dev/role": "srv-pod-b"},
				Ports: []corev1.ServicePort{{Name: "http", Port: httpPort, TargetPort: intstr.FromInt32(httpPort)}}}}, metav1.CreateOptions{})
		if err != nil {
			return "no ingress paths: creating the Service srv-b: " + err.Error()
		}
	}
	for _, svc := range backends {
		meta := kube.ObjectMeta("ing-"+svc, env.Namespace, env.RunID)
		if _, err := env.Client.NetworkingV1().Ingresses(env.Namespace).Create(ctx, ingressFor(meta, t.Class, env.RunID, svc), metav1.CreateOptions{}); err != nil {
			return fmt.Sprintf("no ingress paths: creating the Ingress to %s: %v", svc, err)
		}
	}
	return ""
}

// routeWait bounds the wait for the controller to load the run's Ingresses (Traefik: about a second).
const routeWait = 60 * time.Second

// waitRoutes waits for both routes (the servers are running by now); the reason the ingress paths are left out if
// one never reaches its server.
func waitRoutes(ctx context.Context, env *measure.Env, t ingressTarget, otherNode bool) string {
	backends := []string{"srv"}
	if otherNode {
		backends = append(backends, "srv-b")
	}
	for _, svc := range backends {
		if err := waitRoute(ctx, env.Client, t, IngressPath(env.RunID, svc), routeWait); err != nil {
			return "no ingress paths: the route to " + svc + " through " + t.Class + " never answered from the server: " + err.Error()
		}
	}
	return ""
}
