// Package dnsfacts is the read-only half of the cluster-DNS checks (issue 17 part 1, case B): which DNS
// server answers the cluster's DNS Service, how its replicas are placed (per node, per zone), what protects
// that placement (anti-affinity, topology spread), NodeLocal DNSCache and an autoscaler, and CoreDNS's own
// metrics per replica read through the apiserver's pod proxy over the run's window.
package dnsfacts

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "dns.facts"

// MetricsPort is CoreDNS's prometheus plugin's usual port, used when the pod names none "metrics".
const MetricsPort = 9153

// Concurrency bounds the pod-proxy reads in flight.
const Concurrency = 8

// ZoneLabel is the well-known zone label of nodes.
const ZoneLabel = "topology.kubernetes.io/zone"

// Measurement observes the cluster DNS over a window.
type Measurement struct {
	Length time.Duration
	// Proxy reads a pod's metrics (nil: GET through the apiserver's pod proxy); tests replace it.
	Proxy func(ctx context.Context, env *measure.Env, namespace, pod string, port int) ([]byte, error)
}

// podProxy GETs /metrics of a pod's port through the apiserver's pod proxy.
func podProxy(ctx context.Context, env *measure.Env, namespace, pod string, port int) ([]byte, error) {
	return env.Client.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/namespaces", namespace, "pods", pod+":"+strconv.Itoa(port), "proxy", "metrics").DoRaw(ctx)
}

// New returns the measurement with a window (the time between the two metric scrapes).
func New(window time.Duration) *Measurement { return &Measurement{Length: window} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("cluster DNS: server, replicas per node/zone, anti-affinity/spread, NodeLocal DNSCache, autoscaler; CoreDNS metrics per replica over %s (pod proxy)", m.Length)
}

// Run observes the window on its own.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

type observation struct {
	env     *measure.Env
	facts   Facts
	pods    []corev1.Pod
	port    map[string]int
	start   time.Time
	skipped string
	proxy   func(ctx context.Context, env *measure.Env, namespace, pod string, port int) ([]byte, error)
}

// Start implements measure.Observer: find the DNS, and take each replica's first scrape.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	o := &observation{env: env, port: map[string]int{}, proxy: m.Proxy}
	if o.proxy == nil {
		o.proxy = podProxy
	}
	if err := o.discover(ctx); err != nil {
		return nil, err
	}
	if err := o.listNodes(ctx); err != nil {
		return nil, err
	}
	o.start = env.Clock.Now()
	for i, s := range o.scrapeAll(ctx) {
		o.facts.Replicas[i].Before = s.snap
		o.facts.Replicas[i].Err = s.err
	}
	return o, nil
}

// Sample implements measure.Observation (the window's two scrapes are enough for rates).
func (o *observation) Sample(context.Context) {}

// Gather implements measure.Observation: the replicas' second scrape and the analysis.
func (o *observation) Gather(ctx context.Context) (result.Result, error) {
	o.facts.Window = o.env.Clock.Since(o.start)
	for i, s := range o.scrapeAll(ctx) {
		o.facts.Replicas[i].After = s.snap
		if o.facts.Replicas[i].Err == "" {
			o.facts.Replicas[i].Err = s.err
		}
	}
	if o.skipped != "" {
		o.facts.MetricsSkipped = o.skipped
	}
	return Analyze(o.facts), nil
}

type scraped struct {
	snap *prom.Snapshot
	err  string
}

// scrapeAll reads every replica's /metrics through the pod proxy; a Forbidden answer skips the metrics for
// every replica (with the reason), not the placement facts.
func (o *observation) scrapeAll(ctx context.Context) []scraped {
	out := make([]scraped, len(o.pods))
	if o.skipped != "" {
		return out
	}
	var g errgroup.Group
	g.SetLimit(Concurrency)
	var mu sync.Mutex
	for i := range o.pods {
		p := &o.pods[i]
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			b, err := o.proxy(cctx, o.env, p.Namespace, p.Name, o.port[p.Name])
			if err == nil {
				out[i].snap, err = prom.Parse(bytes.NewReader(b), o.env.Clock.Now())
			}
			if err != nil {
				out[i].err = err.Error()
				if apierrors.IsForbidden(err) {
					mu.Lock()
					o.skipped = "no permission to read the replicas' metrics through the pod proxy (pods/proxy get): " + err.Error()
					mu.Unlock()
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// discover finds the DNS Service, its pods, their placement and protection, NodeLocal DNSCache and an
// autoscaler.
func (o *observation) discover(ctx context.Context) error {
	c := o.env.Client
	svc, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// A cluster without the DNS Service (a lab of simulated nodes only) is a fact, not a failure.
		o.facts.Service, o.facts.Server, o.facts.Workload = "none (no kube-system/kube-dns)", "none", "none"
		return nil
	}
	if apierrors.IsForbidden(err) {
		return measure.Skipf("no permission to get the DNS Service: %v", err)
	}
	if err != nil {
		return fmt.Errorf("getting kube-system/kube-dns: %w", err)
	}
	f := &o.facts
	f.Service, f.ClusterIP = "kube-system/kube-dns", svc.Spec.ClusterIP
	var pods []corev1.Pod
	if len(svc.Spec.Selector) > 0 {
		l, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
		if err != nil {
			return fmt.Errorf("listing the DNS pods: %w", err)
		}
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				pods = append(pods, p)
			}
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	o.pods = pods
	// Endpoint addresses that no pod owns (the lab's default CoreDNS is a process, not a pod).
	slices, err := c.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"})
	if err == nil {
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
					f.Unbacked = append(f.Unbacked, e.Addresses...)
				}
			}
		}
	}
	f.Workload, f.Server = "none", "unknown"
	if len(pods) == 0 && len(f.Unbacked) > 0 {
		f.Workload = "endpoints without pods (" + strings.Join(f.Unbacked, ",") + ")"
	}
	for i := range pods {
		p := &pods[i]
		o.port[p.Name] = metricsPort(p)
		f.Replicas = append(f.Replicas, Replica{Pod: p.Name, Node: p.Spec.NodeName, IP: p.Status.PodIP, Ready: kube.PodReady(p)})
		if i == 0 {
			f.Server = ServerOf(p)
			f.Workload = workloadOf(p)
			f.Protection = Protection(&p.Spec, p.Labels)
		}
	}
	// NodeLocal DNSCache: a DaemonSet of node-cache.
	if ds, err := c.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range ds.Items {
			if strings.Contains(d.Name, "node-local-dns") || imagesContain(d.Spec.Template.Spec.Containers, "node-cache") {
				f.NodeLocal = "DaemonSet " + d.Namespace + "/" + d.Name
			}
		}
	}
	// An autoscaler: an HPA on the DNS Deployment, or a cluster-proportional-autoscaler Deployment.
	if hpas, err := c.AutoscalingV2().HorizontalPodAutoscalers("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		for _, h := range hpas.Items {
			if strings.HasSuffix(f.Workload, "/"+h.Spec.ScaleTargetRef.Name) {
				f.Autoscaler = "HorizontalPodAutoscaler kube-system/" + h.Name
			}
		}
	}
	if f.Autoscaler == "" {
		if ds, err := c.AppsV1().Deployments("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
			for _, d := range ds.Items {
				if imagesContain(d.Spec.Template.Spec.Containers, "cluster-proportional-autoscaler") {
					f.Autoscaler = "cluster-proportional-autoscaler kube-system/" + d.Name
				}
			}
		}
	}
	return nil
}

// listNodes counts the nodes replicas could run on and reads their zones.
func (o *observation) listNodes(ctx context.Context) error {
	f := &o.facts
	nodes, err := o.env.ListNodes(ctx)
	if err != nil {
		return err
	}
	f.Zones = map[string]string{}
	for i := range nodes {
		n := &nodes[i]
		if z := n.Labels[ZoneLabel]; z != "" {
			f.Zones[n.Name] = z
		}
		if !kube.IsSimulated(n) && !n.Spec.Unschedulable && kube.NodeReady(n) {
			f.RealNodes++
		}
	}
	return nil
}

// ServerOf names the DNS server from a pod's images.
func ServerOf(p *corev1.Pod) string {
	switch {
	case imagesContain(p.Spec.Containers, "coredns"):
		return "CoreDNS"
	case imagesContain(p.Spec.Containers, "kube-dns"):
		return "kube-dns"
	case len(p.Spec.Containers) > 0:
		return p.Spec.Containers[0].Image
	}
	return "unknown"
}

// workloadOf names the pod's owner, a ReplicaSet as its Deployment (the ReplicaSet's name less the
// pod-template-hash).
func workloadOf(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if h := p.Labels["pod-template-hash"]; h != "" {
				return "Deployment " + p.Namespace + "/" + strings.TrimSuffix(o.Name, "-"+h)
			}
		}
		return o.Kind + " " + p.Namespace + "/" + o.Name
	}
	return "bare pods"
}

// Protection describes what keeps the pods apart (pure): pod anti-affinity against their own labels, and
// topology spread constraints, with their topology keys; "" when nothing does.
func Protection(spec *corev1.PodSpec, own map[string]string) string {
	var out []string
	selects := func(sel *metav1.LabelSelector) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && sel != nil && !s.Empty() && s.Matches(labels.Set(own))
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if selects(t.LabelSelector) {
				out = append(out, "required anti-affinity on "+t.TopologyKey)
			}
		}
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if selects(w.PodAffinityTerm.LabelSelector) {
				out = append(out, fmt.Sprintf("preferred anti-affinity on %s (weight %d)", w.PodAffinityTerm.TopologyKey, w.Weight))
			}
		}
	}
	for _, c := range spec.TopologySpreadConstraints {
		if selects(c.LabelSelector) {
			out = append(out, fmt.Sprintf("topology spread on %s (maxSkew %d, %s)", c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable))
		}
	}
	return strings.Join(out, "; ")
}

func metricsPort(p *corev1.Pod) int {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == "metrics" && port.ContainerPort > 0 {
				return int(port.ContainerPort)
			}
		}
	}
	return MetricsPort
}

func imagesContain(cs []corev1.Container, s string) bool {
	for _, c := range cs {
		if strings.Contains(c.Image, s) {
			return true
		}
	}
	return false
}
