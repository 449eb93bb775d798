package lab

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestTraefikConfig: --ingress traefik needs real nodes and nothing else is accepted; the plan deploys it after
// the nodes, with its binary in the lab images, and only when asked.
func TestTraefikConfig(t *testing.T) {
	for _, c := range []Config{{Ingress: IngressTraefik}, {Ingress: "nginx", RealNodes: 1}} {
		if err := validateIngress(&c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, c := range []Config{{}, {RealNodes: 1, Ingress: IngressTraefik}} {
		if err := validateIngress(&c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	plan := func(c Config) *Plan {
		t.Helper()
		c.AgentBinary = "/bin/kubeslow"
		bins := map[string]string{}
		for _, b := range plannedBinaries(&c) {
			bins[b] = "/bin/" + b
		}
		p, err := NewPlan(Dirs{State: "/s"}, c, bins)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(Config{RealNodes: 2, Ingress: IngressTraefik})
	order := map[string]int{}
	for i, s := range p.Steps {
		order[s.Name] = i
	}
	ing, ok := order["ingress"]
	if !ok || ing < order["pod-routes"] || !strings.Contains(p.Steps[order["images"]].What, TraefikImage+" from /bin/"+Traefik) {
		t.Errorf("ingress step at %d (ok %v), pod-routes at %d; images: %s", ing, ok, order["pod-routes"], p.Steps[order["images"]].What)
	}
	for _, s := range plan(Config{RealNodes: 2}).Steps {
		if s.Name == "ingress" || strings.Contains(s.What, TraefikImage) {
			t.Errorf("a lab without --ingress has %s: %s", s.Name, s.What)
		}
	}
}

// TestTraefikObjects: Traefik runs on real node 1 with the Ingress provider, its Service's node port is the one
// TraefikURL names on that node's address, and the test Ingress routes IngressTestPath to the test Service's port.
func TestTraefikObjects(t *testing.T) {
	dep := traefikDeployment()
	spec := dep.Spec.Template.Spec
	if spec.NodeSelector[corev1.LabelHostname] != RealNodeName(TraefikNodeIndex) || spec.Containers[0].Image != TraefikImage ||
		!strings.Contains(strings.Join(spec.Containers[0].Args, " "), "--providers.kubernetesingress=true") {
		t.Errorf("deployment %+v", spec)
	}
	svc := traefikService()
	if svc.Spec.Ports[0].NodePort != TraefikNodePort || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
		TraefikURL() != fmt.Sprintf("http://%s:%d", RealNodeIP(TraefikNodeIndex), TraefikNodePort) {
		t.Errorf("service %+v, url %s", svc.Spec, TraefikURL())
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, the pods are %v", k, v, dep.Spec.Template.Labels)
		}
	}
	_, tsvc, ing := ingressTestObjects()
	p := ing.Spec.Rules[0].HTTP.Paths[0]
	if p.Path != IngressTestPath || p.Backend.Service.Name != tsvc.Name || p.Backend.Service.Port.Name != tsvc.Spec.Ports[0].Name ||
		*ing.Spec.IngressClassName != IngressClassName {
		t.Errorf("ingress %+v", ing.Spec)
	}
}

// TestWaitIngressRoute: Traefik's own 404 (no route yet) and 503 (no endpoint) are not the backend; the agent
// server's empty 404 is.
func TestWaitIngressRoute(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			http.NotFound(w, r) // Traefik: no router for the path
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := waitIngressRoute(ctx, fake.NewClientset(), srv.URL+IngressTestPath); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("ready after %d requests, want 3", got)
	}
	var m atomic.Int32
	traefik404 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.Add(1); http.NotFound(w, r) }))
	defer traefik404.Close()
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := waitIngressRoute(ctx, fake.NewClientset(), traefik404.URL); err == nil || m.Load() == 0 {
		t.Errorf("Traefik's own 404 taken for the backend: %v (%d requests)", err, m.Load())
	}
}
