// Package dnsbench is `kubeslow bench dns-load` in a cluster (issue 17 part 2): one kubeslow agent pod per
// real node (at most MaxClients) runs the open-loop DNS generator (internal/load/dnsload) against the cluster DNS
// Service address and against each DNS server behind it directly (each CoreDNS pod IP, or the endpoint
// addresses no pod backs), one client node at a time, so the figures are per client node and per replica.
package dnsbench

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeslow/kubeslow/internal/load/dnsload"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "dns.load"

// MaxClients bounds the client pods (one per real node).
const MaxClients = 5

// Options are the benchmark's settings.
type Options struct {
	// Image holds the kubeslow binary at /kubeslow.
	Image string
	// ExternalNames are external names to mix in (e.g. names under the lab upstream's zone); none by default.
	ExternalNames []string
	// The ramp, per target: Start q/s multiplied by Factor per Step, at most Steps; ended by P99Max or FailMax.
	Start, Factor, FailMax float64
	Steps                  int
	Step, Timeout, P99Max  time.Duration
}

// RampOptions are the options of a ramp (`bench dns-load`'s flags, dnsload.DefaultRamp's defaults) run from
// image against the cluster DNS and the external names.
func RampOptions(image string, rc dnsload.RampConfig, external []string) Options {
	return Options{Image: image, ExternalNames: external, Start: rc.Start, Factor: rc.Factor, Steps: rc.MaxSteps,
		Step: rc.StepDuration, Timeout: rc.Base.Timeout, P99Max: rc.P99Max, FailMax: rc.FailMax}
}

// Measurement is the in-cluster DNS load benchmark.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("open-loop DNS load from a pod per real node against the DNS Service and each DNS replica: ramp from %g q/s x%g per %s (at most %d steps)",
		m.Opts.Start, m.Opts.Factor, m.Opts.Step, m.Opts.Steps)
}

// Target is one DNS server address loaded.
type Target struct {
	Addr string
	// Kind is "service" (the DNS Service's address) or "replica"; Pod and Node name a replica's pod.
	Kind, Pod, Node string
}

const (
	svcName   = "dnsload-peers"
	roleLabel = "kubeslow.dev/role"
	role      = "dnsload-client"
)

// Targets finds the DNS Service's address and the servers behind it (pure over what the API returned).
func Targets(svc *corev1.Service, pods []corev1.Pod, unbacked []string) []Target {
	var out []Target
	if svc != nil && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		out = append(out, Target{Addr: svc.Spec.ClusterIP, Kind: "service"})
	}
	for _, p := range pods {
		if p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
			out = append(out, Target{Addr: p.Status.PodIP, Kind: "replica", Pod: p.Name, Node: p.Spec.NodeName})
		}
	}
	for _, a := range unbacked {
		out = append(out, Target{Addr: a, Kind: "replica"})
	}
	return out
}

// Run creates the client pods and the headless Service, then runs the ramp from each client in turn.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name, Status: result.StatusPass}
	if m.Opts.Image == "" {
		return res, measure.Skipf("needs an image with the kubeslow binary at /kubeslow (--image; the lab's is used with --lab)")
	}
	c := env.Client
	svc, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, measure.Skipf("no cluster DNS Service kube-system/kube-dns")
	}
	if err != nil {
		return res, fmt.Errorf("getting kube-system/kube-dns: %w", err)
	}
	var pods []corev1.Pod
	if len(svc.Spec.Selector) > 0 {
		l, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
		if err != nil {
			return res, fmt.Errorf("listing the DNS pods: %w", err)
		}
		pods = l.Items
		sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	}
	var unbacked []string
	if slices, err := c.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"}); err == nil {
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
					unbacked = append(unbacked, e.Addresses...)
				}
			}
		}
	}
	targets := Targets(svc, pods, unbacked)
	nodes, err := measure.RealNodes(ctx, env)
	if err != nil {
		return res, err
	}
	if len(nodes) == 0 {
		return res, measure.Skipf("no real node (simulated nodes run no pods)")
	}
	if len(nodes) > MaxClients {
		nodes = nodes[:MaxClients]
	}
	if _, err := c.CoreV1().Services(env.Namespace).Create(ctx, &corev1.Service{ObjectMeta: kube.ObjectMeta(svcName, env.Namespace, env.RunID),
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{roleLabel: role}, Ports: []corev1.ServicePort{{Name: "p", Port: 80}}}},
		metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("creating the headless Service: %w", err)
	}
	var names []string
	for i, n := range nodes {
		p := env.AgentPod(fmt.Sprintf("dnsload-%d", i), m.Opts.Image, n.Name, agentproto.Pause{}.Args()...)
		p.Labels[roleLabel] = role
		p.Spec.Hostname, p.Spec.Subdomain = p.Name, svcName
		if _, err := c.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("creating %s: %w", p.Name, err)
		}
		names = append(names, p.Name)
	}
	running, err := env.WaitRunning(ctx, names...)
	if err != nil {
		return res, err
	}
	mix := []string{
		"service=kubernetes.default.svc.cluster.local.",
		fmt.Sprintf("headless=%s.%s.%s.svc.cluster.local.", names[0], svcName, env.Namespace),
		fmt.Sprintf("nxdomain=nope-%s.%s.svc.cluster.local.", env.RunID, env.Namespace),
	}
	for _, e := range m.Opts.ExternalNames {
		mix = append(mix, "external="+e)
	}
	addrs := make([]string, len(targets))
	byAddr := map[string]Target{}
	for i, t := range targets {
		addrs[i] = t.Addr + ":53"
		byAddr[addrs[i]] = t
	}
	res.Records = append(res.Records, result.Record{ID: "mix", Labels: map[string]string{"names": fmt.Sprint(mix)}})
	o := m.Opts
	for _, name := range names {
		p := running[name]
		env.Log.Info("dns load", "client", name, "node", p.Spec.NodeName, "targets", addrs)
		r, err := agentproto.Exec(ctx, env.Config, c, env.Namespace, name, agentproto.BenchDNSLoad{Servers: addrs, Names: mix,
			Start: o.Start, Factor: o.Factor, Steps: o.Steps, Step: o.Step, Timeout: o.Timeout, P99Max: o.P99Max, FailMax: o.FailMax})
		if err != nil {
			return res, err
		}
		for _, x := range r.Metrics {
			l := map[string]string{"client_node": p.Spec.NodeName}
			for k, v := range x.Labels {
				l[k] = v
			}
			if t, ok := byAddr[x.Labels["server"]]; ok {
				l["target"] = t.Kind
				if t.Pod != "" {
					l["pod"], l["node"] = t.Pod, t.Node
				}
			}
			x.Labels = l
			res.Metrics = append(res.Metrics, x)
		}
	}
	return res, nil
}
