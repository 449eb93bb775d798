package netpath

import (
	"context"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func ingressNode(name, ip string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

// traefikObjects are what K3S (and the lab) show of Traefik: its IngressClass, its Service (labelled as its chart
// does, with a web port), the Service's ready endpoint on node-2, and an unrelated Service of the same shape.
func traefikObjects(svcType corev1.ServiceType) ([]networkingv1.IngressClass, []corev1.Service, []discoveryv1.EndpointSlice) {
	classes := []networkingv1.IngressClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/other"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "traefik", Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
			Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller"}},
	}
	svcs := []corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 31000}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "traefik", Namespace: "kube-system", Labels: map[string]string{"app.kubernetes.io/name": "traefik"}},
			Spec: corev1.ServiceSpec{Type: svcType, Ports: []corev1.ServicePort{{Name: "metrics", Port: 9100, NodePort: 30910}, {Name: "web", Port: 80, NodePort: 30080}}}},
	}
	slices := []discoveryv1.EndpointSlice{{ObjectMeta: metav1.ObjectMeta{Name: "traefik-x", Namespace: "kube-system",
		Labels: map[string]string{discoveryv1.LabelServiceName: "traefik"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.18.9.9"}, NodeName: ptr.To("node-3"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			{Addresses: []string{"198.18.2.4"}, NodeName: ptr.To("node-2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}}
	return classes, svcs, slices
}

// TestFindIngress: the default IngressClass's controller's Service is found by its name label, reached on its web
// node port at the address of the node its ready endpoint runs on (the ingress's node), or at its load balancer;
// a controller without a reachable Service, or no class at all, is no ingress with the reason; --ingress-url wins,
// and names the ingress's node when a node has its address.
func TestFindIngress(t *testing.T) {
	nodes := []corev1.Node{ingressNode("node-1", "198.18.0.11"), ingressNode("node-2", "198.18.0.12"), ingressNode("node-3", "198.18.0.13")}
	classes, svcs, slices := traefikObjects(corev1.ServiceTypeNodePort)
	in, why := FindIngress(classes, svcs, slices, nodes, "")
	if why != "" || in.URL != "http://198.18.0.12:30080" || in.Node != "node-2" || in.Class != "traefik" || !strings.Contains(in.Via, "kube-system/traefik node port 30080") {
		t.Errorf("node port: %+v %q", in, why)
	}
	lb := svcs[1].DeepCopy()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.19.5.5"}}
	if in, why := FindIngress(classes, []corev1.Service{*lb}, slices, nodes, ""); why != "" || in.URL != "http://198.19.5.5:80" || in.Node != "node-2" {
		t.Errorf("load balancer: %+v %q", in, why)
	}
	_, cip, _ := traefikObjects(corev1.ServiceTypeClusterIP)
	if _, why := FindIngress(classes, cip, slices, nodes, ""); !strings.Contains(why, "kube-system/traefik is ClusterIP") || !strings.Contains(why, "--ingress-url") {
		t.Errorf("ClusterIP only: %q", why)
	}
	if _, why := FindIngress(classes, svcs, slices[:0], nodes, ""); !strings.Contains(why, "no ready endpoint") {
		t.Errorf("no endpoint: %q", why)
	}
	if _, why := FindIngress(nil, svcs, slices, nodes, ""); !strings.Contains(why, "no IngressClass") {
		t.Errorf("no class: %q", why)
	}
	if in, why := FindIngress(classes, nil, nil, nodes, "http://198.18.0.13:8080/"); why != "" || in.URL != "http://198.18.0.13:8080" || in.Node != "node-3" || in.Class != "traefik" {
		t.Errorf("--ingress-url: %+v %q", in, why)
	}
	for _, bad := range []string{"https://x", "198.18.0.1:80", "http://", "::"} {
		if _, why := FindIngress(classes, nil, nil, nodes, bad); why == "" {
			t.Errorf("--ingress-url %q accepted", bad)
		}
	}
	if err := (Options{Duration: 1, Concurrency: 1, Repeats: 1, IngressURL: "ftp://x"}).Validate(); err == nil {
		t.Error("Validate accepted --ingress-url ftp://x")
	}
}

// TestDiscoverIngress reads the same objects through the API, and a forbidden list is a reason, not an error.
func TestDiscoverIngress(t *testing.T) {
	classes, svcs, slices := traefikObjects(corev1.ServiceTypeNodePort)
	cs := fake.NewClientset(&classes[0], &classes[1], &svcs[0], &svcs[1], &slices[0])
	nodes := []corev1.Node{ingressNode("node-2", "198.18.0.12")}
	if in, why := discoverIngress(context.Background(), cs, nodes, ""); why != "" || in.URL != "http://198.18.0.12:30080" {
		t.Errorf("%+v %q", in, why)
	}
	if _, why := discoverIngress(context.Background(), fake.NewClientset(), nodes, ""); !strings.Contains(why, "no IngressClass") {
		t.Errorf("empty cluster: %q", why)
	}
}

func FuzzFindIngressURL(f *testing.F) {
	for _, s := range []string{"http://198.18.0.1:30080", "http://[::1]:80/x", "https://a", "", "http://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, why := FindIngress(nil, nil, nil, nil, s)
		if why != "" {
			return
		}
		if s == "" {
			t.Fatalf("no URL and no class, yet %+v", in)
		}
		u, err := url.Parse(in.URL)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			t.Fatalf("%q gave the URL %q", s, in.URL)
		}
	})
}

// ingressSamples are a two-node matrix with the ingress paths: the proxy divides host->host's requests/s by proxy
// (and multiplies its latency by as much), the backend on the other node costs 1.3x more.
func ingressSamples(proxy float64) map[string][]float64 {
	s := map[string][]float64{}
	put := func(path, conn string, f float64) {
		for _, r := range []float64{0.98, 1, 1.02} {
			s[SampleKey(path, "rps", conn)] = append(s[SampleKey(path, "rps", conn)], 10000/f*r)
			s[SampleKey(path, "latency_p50", conn)] = append(s[SampleKey(path, "latency_p50", conn)], 0.001*f*r)
			s[SampleKey(path, "latency_p99", conn)] = append(s[SampleKey(path, "latency_p99", conn)], 0.004*f*r)
		}
	}
	for _, conn := range []string{"keepalive", "new"} {
		nc := 1.0
		if conn == "new" {
			nc = 1.2 // the Service's DNAT costs per new connection
		}
		for path, f := range map[string]float64{"host->host": 1, "host->pod": 1.05, "pod->pod other node": 1.1, "pod->Service": 1.1 * nc, "host->NodePort": 1.02,
			PathIngressSame: proxy, PathIngressOther: proxy * 1.3} {
			put(path, conn, f)
		}
	}
	return s
}

func ingressReport(proxy float64) *result.Report {
	res := result.Result{Name: Name, Status: result.StatusPass}
	var paths []Path
	for _, p := range []string{"host->host", "host->pod", "pod->pod other node", "pod->Service", "host->NodePort", PathIngressSame, PathIngressOther} {
		paths = append(paths, Path{Name: p})
	}
	s := ingressSamples(proxy)
	Summarize(&res, paths, s)
	HopCosts(&res, s)
	return &result.Report{Cluster: result.Cluster{Facts: map[string]string{}}, Results: []result.Result{res}}
}

// TestIngressHops: the ingress proxy is costed against host->host and the other node's backend against the
// ingress's node's, in throughput and p50/p99, and both are in the hops record; KS-NET-HOP names the proxy first
// with its remedies and the threshold's source, leaves the cheap kernel hops out, and stays quiet when no hop
// reaches 2x; KS-NET-POD does not count the ingress paths as the pod network's.
func TestIngressHops(t *testing.T) {
	r := ingressReport(5)
	got := map[string]float64{}
	for _, m := range r.Results[0].Metrics {
		got[m.Name+"/"+m.Labels["hop"]+"/"+m.Labels["conn"]] = m.Value
	}
	near := func(k string, want float64) {
		t.Helper()
		if v := got[k]; v < want*0.999 || v > want*1.001 {
			t.Errorf("%s = %v, want %v", k, v, want)
		}
	}
	near("hop_throughput_cost/"+HopIngress+"/keepalive", 5)
	near("hop_p99_cost/"+HopIngress+"/new", 5)
	near("hop_p50_cost/"+HopIngressOther+"/keepalive", 1.3)
	var hops string
	for _, rec := range r.Results[0].Records {
		if rec.ID == "hops keepalive" {
			hops = rec.Labels["hops"]
		}
	}
	if !strings.Contains(hops, HopIngress+" 5.00x, p50 5.00x, p99 5.00x ("+PathIngressSame+" at 0.20x host->host's throughput)") {
		t.Errorf("hops record %q", hops)
	}
	fs, _ := rule.Evaluate(r, Rules())
	var hop *result.Finding
	for i, f := range fs {
		switch f.ID {
		case "KS-NET-HOP":
			hop = &fs[i]
		case "KS-NET-POD":
			for _, it := range f.Items {
				if strings.Contains(it.Key, "ingress") {
					t.Errorf("KS-NET-POD on an ingress path: %s", it.Summary)
				}
			}
		}
	}
	if hop == nil {
		t.Fatalf("no KS-NET-HOP: %+v", fs)
	}
	if len(hop.Items) != 1 || hop.Items[0].Key != "hop="+HopIngress || !strings.Contains(hop.Summary, "divides throughput by 5x") ||
		!strings.Contains(hop.Summary, "host network") || !strings.Contains(hop.Summary, "p99 5x") || !strings.Contains(hop.Threshold.Source, "case D") {
		t.Errorf("KS-NET-HOP %+v", hop)
	}
	fs, _ = rule.Evaluate(ingressReport(1.5), Rules())
	for _, f := range fs {
		if f.ID == "KS-NET-HOP" {
			t.Errorf("a 1.5x proxy: %s %s", f.ID, f.Summary)
		}
	}
}
