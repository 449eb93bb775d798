package netpath

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// The ingress paths of the matrix (case D: client -> Traefik -> Service -> pod): a host-network client on the other
// node reaches the ingress controller, which proxies to a Service whose pod is on the ingress's node or on another
// node.
const (
	PathIngressSame  = "host->ingress->pod same node"
	PathIngressOther = "host->ingress->pod other node"
)

// IngressPaths are the matrix's ingress paths.
var IngressPaths = []string{PathIngressSame, PathIngressOther}

// Ingress is the ingress controller the ingress paths go through.
type Ingress struct {
	// Class is the IngressClass the measurement's Ingress names ("" when the cluster has none: an Ingress
	// without a class, which most controllers serve).
	Class, Controller string
	// URL is where clients reach the controller (http://host:port).
	URL string
	// Node is the node the controller's endpoint runs on ("" when unknown).
	Node string
	// Via says how it was found.
	Via string
}

// controllerNames are the names an IngressClass's controller's Service may carry (as app.kubernetes.io/name or
// its own name): the class's name, the controller's domain's first label and its path's last element
// ("traefik.io/ingress-controller": traefik, ingress-controller; "k8s.io/ingress-nginx": k8s, ingress-nginx).
func controllerNames(cl networkingv1.IngressClass) map[string]bool {
	out := map[string]bool{cl.Name: true}
	domain, rest, _ := strings.Cut(cl.Spec.Controller, "/")
	if first, _, _ := strings.Cut(domain, "."); first != "" {
		out[first] = true
	}
	if i := strings.LastIndex(rest, "/"); rest != "" {
		out[rest[i+1:]] = true
	}
	return out
}

// defaultClass is the IngressClass Ingresses without one get (the annotated default), else the first by name.
func defaultClass(classes []networkingv1.IngressClass) (networkingv1.IngressClass, bool) {
	if len(classes) == 0 {
		return networkingv1.IngressClass{}, false
	}
	sorted := append([]networkingv1.IngressClass(nil), classes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, c := range sorted {
		if c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			return c, true
		}
	}
	return sorted[0], true
}

// httpPort is a Service's plain-HTTP port: named web or http, else port 80.
func httpServicePort(svc corev1.Service) (corev1.ServicePort, bool) {
	for _, want := range []func(corev1.ServicePort) bool{
		func(p corev1.ServicePort) bool { return p.Name == "web" || p.Name == "http" },
		func(p corev1.ServicePort) bool { return p.Port == 80 },
	} {
		for _, p := range svc.Spec.Ports {
			if want(p) && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
				return p, true
			}
		}
	}
	return corev1.ServicePort{}, false
}

// FindIngress finds the cluster's ingress controller from what the cluster shows (pure): the default IngressClass,
// the controller's Service (a NodePort or LoadBalancer Service whose app.kubernetes.io/name or name is one of the
// controller's names) with a plain-HTTP port, reached at its load balancer's address or, for a node port, at the
// address of the node its ready endpoint runs on, which is the ingress's node. With ingressURL (--ingress-url) the
// address is that, and the ingress's node the node with that address, if one has it. It returns why there is none
// when it finds none.
func FindIngress(classes []networkingv1.IngressClass, svcs []corev1.Service, slices []discoveryv1.EndpointSlice, nodes []corev1.Node, ingressURL string) (Ingress, string) {
	cl, hasClass := defaultClass(classes)
	in := Ingress{Class: cl.Name, Controller: cl.Spec.Controller}
	nodeOf := map[string]string{}
	for _, n := range nodes {
		nodeOf[nodeIP(n)] = n.Name
	}
	if ingressURL != "" {
		u, err := url.Parse(ingressURL)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return Ingress{}, fmt.Sprintf("--ingress-url %q: want http://host[:port]", ingressURL)
		}
		in.URL, in.Node, in.Via = strings.TrimSuffix(u.Scheme+"://"+u.Host, "/"), nodeOf[u.Hostname()], "--ingress-url"
		return in, ""
	}
	if !hasClass {
		return Ingress{}, "no IngressClass in the cluster: no ingress controller announces itself (--ingress-url names one)"
	}
	names := controllerNames(cl)
	sorted := append([]corev1.Service(nil), svcs...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	var tried []string
	for _, svc := range sorted {
		if !names[svc.Labels["app.kubernetes.io/name"]] && !names[svc.Name] {
			continue
		}
		id := svc.Namespace + "/" + svc.Name
		if svc.Spec.Type != corev1.ServiceTypeNodePort && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			tried = append(tried, id+" is "+string(svc.Spec.Type)+" (not reachable from outside the cluster)")
			continue
		}
		port, ok := httpServicePort(svc)
		if !ok {
			tried = append(tried, id+" has no plain-HTTP port (web, http or 80)")
			continue
		}
		node := readyEndpointNode(slices, svc)
		for _, lb := range svc.Status.LoadBalancer.Ingress {
			host := lb.IP
			if host == "" {
				host = lb.Hostname
			}
			if host != "" {
				in.URL, in.Node = "http://"+net.JoinHostPort(host, strconv.Itoa(int(port.Port))), node
				in.Via = fmt.Sprintf("IngressClass %s (%s), Service %s's load balancer", cl.Name, cl.Spec.Controller, id)
				return in, ""
			}
		}
		if port.NodePort == 0 {
			tried = append(tried, id+" has no node port and no load-balancer address")
			continue
		}
		var ip string
		for _, n := range nodes {
			if n.Name == node {
				ip = nodeIP(n)
			}
		}
		if node == "" || ip == "" {
			tried = append(tried, id+" has no ready endpoint on a node with an InternalIP")
			continue
		}
		in.URL, in.Node = "http://"+net.JoinHostPort(ip, strconv.Itoa(int(port.NodePort))), node
		in.Via = fmt.Sprintf("IngressClass %s (%s), Service %s node port %d on %s, where its endpoint runs", cl.Name, cl.Spec.Controller, id, port.NodePort, node)
		return in, ""
	}
	why := fmt.Sprintf("IngressClass %s (%s): no reachable Service of its controller", cl.Name, cl.Spec.Controller)
	if len(tried) > 0 {
		why += ": " + strings.Join(tried, "; ")
	}
	return Ingress{}, why + " (--ingress-url names one)"
}

// readyEndpointNode is the node of the Service's first ready endpoint (by node name), "" if none.
func readyEndpointNode(slices []discoveryv1.EndpointSlice, svc corev1.Service) string {
	var nodes []string
	for _, s := range slices {
		if s.Namespace != svc.Namespace || s.Labels[discoveryv1.LabelServiceName] != svc.Name {
			continue
		}
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Conditions.Ready, false) && e.NodeName != nil && *e.NodeName != "" {
				nodes = append(nodes, *e.NodeName)
			}
		}
	}
	sort.Strings(nodes)
	if len(nodes) == 0 {
		return ""
	}
	return nodes[0]
}

// discoverIngress reads what FindIngress needs from the cluster; an error is why the ingress paths could not be
// measured (no permission), not a failure of the benchmark.
func discoverIngress(ctx context.Context, c kubernetes.Interface, nodes []corev1.Node, ingressURL string) (Ingress, string) {
	classes, err := c.NetworkingV1().IngressClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Ingress{}, "listing IngressClasses: " + err.Error()
	}
	if ingressURL != "" {
		return FindIngress(classes.Items, nil, nil, nodes, ingressURL)
	}
	svcs, err := c.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return Ingress{}, "listing Services: " + err.Error()
	}
	slices, err := c.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return Ingress{}, "listing EndpointSlices: " + err.Error()
	}
	return FindIngress(classes.Items, svcs.Items, slices.Items, nodes, "")
}

// ingressPrefix is the run's path prefix on the ingress; the same-node and other-node backends are below it.
func ingressPrefix(runID string) string { return "/kubeslow-" + runID }

// createIngress creates the Service of the other node's server pod and the Ingress to both Services: the
// ingress's node's server (the matrix's Service srv) at PREFIX/same and the other node's (srv-b) at PREFIX/other.
func (m *Measurement) createIngress(ctx context.Context, env *measure.Env, in Ingress, other bool) error {
	if other {
		_, err := env.Client.CoreV1().Services(env.Namespace).Create(ctx, &corev1.Service{ObjectMeta: kube.ObjectMeta("srv-b", env.Namespace, env.RunID),
			Spec: corev1.ServiceSpec{Selector: map[string]string{"kubeslow.dev/role": "srv-pod-b"},
				Ports: []corev1.ServicePort{{Name: "http", Port: httpPort, TargetPort: intstr.FromInt32(httpPort)}}}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating the Service srv-b: %w", err)
		}
	}
	prefix := networkingv1.PathTypePrefix
	path := func(p, svc string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: ingressPrefix(env.RunID) + p, PathType: &prefix, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: httpPort}}}}
	}
	paths := []networkingv1.HTTPIngressPath{path("/same", "srv")}
	if other {
		paths = append(paths, path("/other", "srv-b"))
	}
	ing := &networkingv1.Ingress{ObjectMeta: kube.ObjectMeta("srv", env.Namespace, env.RunID), Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}}}}
	if in.Class != "" {
		ing.Spec.IngressClassName = ptr.To(in.Class)
	}
	if _, err := env.Client.NetworkingV1().Ingresses(env.Namespace).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("no permission to create an Ingress: %w", err)
		}
		return fmt.Errorf("creating the Ingress: %w", err)
	}
	return nil
}

// waitRoutes waits until every url is answered by kubeslow's agent server through the ingress, from where kubeslow
// runs (the ingress is the cluster's entry from outside): 404 with an empty body. A controller answers a path it
// has no route for yet with its own 404 (Traefik's and ingress-nginx's have a body) and a route without a ready
// endpoint with 503, so only the agent's empty 404 shows the route works end to end.
// Each url is waited for timeout, or until the end of the run's budget when that comes first (which the
// error then says).
func waitRoutes(ctx context.Context, env *measure.Env, timeout time.Duration, urls ...string) error {
	for _, u := range urls {
		if err := waitRoute(ctx, env, timeout, u); err != nil {
			return fmt.Errorf("through the ingress to kubeslow's server: %w", err)
		}
	}
	return nil
}

func waitRoute(ctx context.Context, env *measure.Env, timeout time.Duration, url string) error {
	wctx, cancel, bound := env.BoundContext(ctx, timeout)
	defer cancel()
	err := agentproto.WaitServed(wctx, url, bound.D)
	if err != nil && measure.BudgetEnded(wctx) && ctx.Err() == nil {
		return fmt.Errorf("%w%s", err, bound.Note())
	}
	return err
}
