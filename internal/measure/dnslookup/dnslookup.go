package dnslookup

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// MaxClients bounds the client pods (one per real node).
const MaxClients = 3

// Options are the measurement's settings.
type Options struct {
	// Image holds the kubeslow binary at /kubeslow; empty skips the measurement.
	Image string
	// Duration of the lookups per client (all clients at once), Interval between two lookups' starts (open
	// loop), Concurrency the most in flight; Timeout bounds a lookup past the resolver's retries.
	Duration, Interval, Timeout time.Duration
	Concurrency                 int
}

// DefaultOptions: 10 s of lookups, one every 25 ms (400 per client, open loop), at most 512 in flight, each
// bounded by 12 s (two 5 s time-outs are seen).
func DefaultOptions() Options {
	return Options{Duration: 10 * time.Second, Interval: 25 * time.Millisecond, Timeout: 12 * time.Second, Concurrency: 512}
}

// Measurement is the lookup-shape probe.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("DNS lookups from a pod per real node (at most %d) for %s with the pod's resolver: how many take a multiple of its time-out (dropped queries, kubernetes#56903)",
		MaxClients, m.Opts.Duration)
}

// Names are the names looked up: the API's Service and the DNS Service's own name (each resolves in any
// cluster with cluster DNS), fully qualified so that no search path multiplies the queries.
var Names = []string{"kubernetes.default.svc.cluster.local.", "kube-dns.kube-system.svc.cluster.local."}

// Run creates a client pod per real node, runs the lookups in all of them at once, and analyses them.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	if m.Opts.Image == "" {
		return result.Result{}, measure.Skipf("needs an image with the kubeslow binary at /kubeslow (--image; the lab's is used with --lab)")
	}
	nodes, err := measure.RealNodes(ctx, env)
	if err != nil {
		return result.Result{}, err
	}
	if len(nodes) == 0 {
		return result.Result{}, measure.Skipf("no real node (simulated nodes run no pods)")
	}
	if len(nodes) > MaxClients {
		nodes = nodes[:MaxClients]
	}
	var names []string
	for i, n := range nodes {
		p := env.AgentPod(fmt.Sprintf("dnslookup-%d", i), m.Opts.Image, n.Name, agentproto.Pause{}.Args()...)
		if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return result.Result{}, fmt.Errorf("creating %s: %w", p.Name, err)
		}
		names = append(names, p.Name)
	}
	running, err := env.WaitRunning(ctx, names...)
	if err != nil {
		return result.Result{}, err
	}
	o := m.Opts
	type out struct {
		c   Client
		err error
	}
	ch := make(chan out, len(names))
	for _, name := range names {
		node := running[name].Spec.NodeName
		go func() {
			l, err := agentproto.Exec(ctx, env.Config, env.Client, env.Namespace, name, agentproto.DNSLookups{Duration: o.Duration, Interval: o.Interval,
				Timeout: o.Timeout, Concurrency: o.Concurrency, Names: Names})
			ch <- out{Client{Node: node, Lookups: l}, err}
		}()
	}
	var clients []Client
	var errs []error
	for range names {
		x := <-ch
		if x.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", x.c.Node, x.err))
			continue
		}
		clients = append(clients, x.c)
	}
	if len(clients) == 0 {
		return result.Result{}, fmt.Errorf("no client's lookups: %v", errs)
	}
	res := Analyze(clients)
	if len(errs) > 0 {
		res.Reason = fmt.Sprintf("%d of %d clients failed: %v", len(errs), len(names), errs)
	}
	return res, nil
}
