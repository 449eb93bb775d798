package netpath

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func ingressClass(name string, dflt bool) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller"}}
	if dflt {
		c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
	}
	return c
}

func controllerService(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "traefik", Namespace: "kube-system", Labels: map[string]string{"app.kubernetes.io/name": "traefik"}},
		Spec: corev1.ServiceSpec{Type: typ, Ports: ports, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}}
}

func controllerSlice(node string, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "traefik-x", Namespace: "kube-system", Labels: map[string]string{discoveryv1.LabelServiceName: "traefik"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.18.1.5"}, NodeName: ptr.To(node), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}}}
}

// TestFindIngress: the default (or only) IngressClass and a recognised controller's Service with an HTTP node
// port and a ready endpoint on a real node; any missing piece is a reason, never a guess.
func TestFindIngress(t *testing.T) {
	web := corev1.ServicePort{Name: "web", Port: 80, NodePort: 30080}
	metrics := corev1.ServicePort{Name: "metrics", Port: 9100, NodePort: 31000}
	real := []string{"lab-node-1", "lab-node-2"}
	for _, c := range []struct {
		name    string
		objs    []runtime.Object
		want    ingressTarget
		because string // the reason's part, when there are no ingress paths
	}{
		{name: "traefik on node 2", objs: []runtime.Object{ingressClass("traefik", true), ingressClass("other", false),
			controllerService(corev1.ServiceTypeNodePort, metrics, web), controllerSlice("lab-node-2", true)},
			want: ingressTarget{Class: "traefik", Namespace: "kube-system", Name: "traefik", Port: "web", NodePort: 30080, Node: "lab-node-2",
				ExternalTraffic: "Local", ControllerString: "traefik.io/ingress-controller"}},
		{name: "the only class, not marked default", objs: []runtime.Object{ingressClass("traefik", false),
			controllerService(corev1.ServiceTypeLoadBalancer, web), controllerSlice("lab-node-1", true)},
			want: ingressTarget{Class: "traefik", Namespace: "kube-system", Name: "traefik", Port: "web", NodePort: 30080, Node: "lab-node-1",
				ExternalTraffic: "Local", ControllerString: "traefik.io/ingress-controller"}},
		{name: "no class", objs: nil, because: "0 IngressClasses"},
		{name: "two classes, no default", objs: []runtime.Object{ingressClass("a", false), ingressClass("b", false)}, because: "none is the default"},
		{name: "ClusterIP controller", objs: []runtime.Object{ingressClass("traefik", true), controllerService(corev1.ServiceTypeClusterIP, corev1.ServicePort{Name: "web", Port: 80})},
			because: "is ClusterIP (no node port)"},
		{name: "no HTTP node port", objs: []runtime.Object{ingressClass("traefik", true), controllerService(corev1.ServiceTypeNodePort, metrics), controllerSlice("lab-node-1", true)},
			because: "no HTTP node port"},
		{name: "endpoint not ready", objs: []runtime.Object{ingressClass("traefik", true), controllerService(corev1.ServiceTypeNodePort, web), controllerSlice("lab-node-1", false)},
			because: "no ready endpoint on a real node"},
		{name: "endpoint on a simulated node", objs: []runtime.Object{ingressClass("traefik", true), controllerService(corev1.ServiceTypeNodePort, web), controllerSlice("kwok-1", true)},
			because: "no ready endpoint on a real node"},
		{name: "no controller Service", objs: []runtime.Object{ingressClass("nginx", true)}, because: "no Service labelled app.kubernetes.io/name=traefik|ingress-nginx"},
	} {
		got, reason, err := findIngress(context.Background(), fake.NewClientset(c.objs...), real)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.because == "" {
			if reason != "" || got != c.want {
				t.Errorf("%s: %+v, %q; want %+v", c.name, got, reason, c.want)
			}
			continue
		}
		if !strings.HasPrefix(reason, "no ingress paths: ") || !strings.Contains(reason, c.because) {
			t.Errorf("%s: reason %q, want one with %q", c.name, reason, c.because)
		}
	}
}

// TestRouteAnswer: only the backend's answer (kubeslow's server: 404, empty body) counts as routed; the
// controller's own 404 page and 502/503 do not.
func TestRouteAnswer(t *testing.T) {
	if err := RouteAnswer(404, nil); err != nil {
		t.Errorf("backend answer: %v", err)
	}
	for _, c := range []struct {
		status int
		body   string
	}{{404, "404 page not found\n"}, {503, "Service Unavailable"}, {502, "Bad Gateway"}, {200, ""},
		{404, "<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>"}} {
		err := RouteAnswer(c.status, []byte(c.body))
		if !errors.Is(err, errNoRoute) {
			t.Errorf("%d %q: %v, want errNoRoute", c.status, c.body, err)
		}
		if err != nil && len(err.Error()) > 120 {
			t.Errorf("error not shortened: %q", err)
		}
	}
}

// TestHopCostsIngress: the ingress proxy is costed against the NodePort path (both cross one node port), the
// ingress's pod network against the same request to its own node, and the record gives the end-to-end figure of
// case D (client -> ingress -> pod on another node against host -> host).
func TestHopCostsIngress(t *testing.T) {
	s := map[string][]float64{}
	for path, f := range map[string]float64{"host->host": 1, "pod->pod other node": 1.5, "pod->Service": 1.6, "host->NodePort": 1.2,
		"host->ingress->pod same node": 4.8, "host->ingress->pod other node": 7.2} {
		s[SampleKey(path, "rps", "new")] = []float64{10000 / f}
		s[SampleKey(path, "latency_p50", "new")] = []float64{0.001 * f}
	}
	var res result.Result
	HopCosts(&res, s)
	got := map[string]float64{}
	for _, m := range res.Metrics {
		got[m.Name+"/"+m.Labels["path"]+"/"+m.Labels["base"]] = m.Value
	}
	for k, want := range map[string]float64{
		"hop_throughput_cost/host->ingress->pod same node/host->NodePort":                4,
		"hop_throughput_cost/host->ingress->pod other node/host->ingress->pod same node": 1.5,
		"hop_p50_cost/host->ingress->pod same node/host->NodePort":                       4,
	} {
		if v := got[k]; v < want*0.999 || v > want*1.001 {
			t.Errorf("%s = %v, want %v", k, v, want)
		}
	}
	if len(res.Records) != 1 || res.Records[0].Labels["end_to_end"] != "host->ingress->pod other node 7.20x fewer requests/s than host->host" {
		t.Errorf("records %+v", res.Records)
	}
}
