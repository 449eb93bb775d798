// Package dnsready measures how long after a pod is Ready its per-pod DNS name (through a headless Service)
// resolves for a client that was already asking — case A: the lead of an Indexed Job looked its peers up before
// they existed, CoreDNS cached the "no such host", and the client's exponential back-off turned seconds of lag
// into minutes. The lag is split into Ready -> EndpointSlice (the endpoint controller) and EndpointSlice ->
// resolvable (the DNS server and its caches), and the same lag is replayed against a back-off schedule to show
// what a retrying client would have waited.
package dnsready

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "dns.readiness"

// Metric names of the result that rules read (each lag also has _p50 and _max).
const (
	// MetricDNSLagP99: Ready -> resolvable; split into Ready -> EndpointSlice (MetricEndpointLagP99) and
	// EndpointSlice -> resolvable (MetricServingLagP99).
	MetricDNSLagP99      = "dns_lag_p99"
	MetricEndpointLagP99 = "endpoint_lag_p99"
	MetricServingLagP99  = "serving_lag_p99"
	// MetricBackoffDelayP99: Ready -> a backing-off client's success; MetricBackoffExtraP99: resolvable -> that success.
	MetricBackoffDelayP99 = "client_backoff_delay_p99"
	MetricBackoffExtraP99 = "client_backoff_extra_p99"
)

// Options configure the measurement.
type Options struct {
	// Image holds the kubeslow binary at /kubeslow.
	Image string
	// Count of target pods (peers), each with a per-pod DNS name.
	Count int
	// Interval between a waiting client's attempts; Wait bounds the whole wait.
	Interval, Wait time.Duration
	// Backoff is the schedule replayed against the measured lags.
	Backoff Backoff
}

// Measurement is the DNS readiness benchmark.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("per-pod DNS names of %d pods behind a headless Service: Ready -> resolvable for a client asking every %s", m.Opts.Count, m.Opts.Interval)
}

const (
	svcName    = "peers"
	roleLabel  = "kubeslow.dev/role"
	targetRole = "dns-target"
)

// Run creates the headless Service and a client pod that starts asking for the peers' names, then the peers;
// it records when each peer was Ready, when its endpoint was published and when the client first resolved it.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name, Status: result.StatusPass}
	if m.Opts.Image == "" {
		return res, measure.Skipf("%s (the lab's is used with --lab)", agentimage.NoImage)
	}
	node, err := realNode(ctx, env)
	if err != nil {
		return res, err
	}
	meta := kube.ObjectMeta(svcName, env.Namespace, env.RunID)
	if _, err := env.Client.CoreV1().Services(env.Namespace).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{roleLabel: targetRole},
		Ports: []corev1.ServicePort{{Name: "p", Port: 80}},
	}}, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to create Services: %v", err)
		}
		return res, fmt.Errorf("creating the headless Service: %w", err)
	}
	client := env.AgentPod("dns-client", m.Opts.Image, node, agentproto.Pause{}.Args()...)
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, client, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to create pods: %v", err)
		}
		return res, fmt.Errorf("creating the client pod: %w", err)
	}
	if _, err := env.WaitRunning(ctx, client.Name); err != nil {
		return res, err
	}
	names := make([]string, m.Opts.Count)
	for i := range names {
		names[i] = fmt.Sprintf("peer-%d.%s.%s.svc.cluster.local.", i, svcName, env.Namespace)
	}
	// Watch the peers and the Service's EndpointSlices before they exist.
	obs := newObserver(env, roleLabel+"="+targetRole, svcName)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := obs.start(wctx, env); err != nil {
		return res, err
	}
	// The client asks from now on, as case A's lead did before its peers existed.
	type waitOut struct {
		ws  []agent.DNSWait
		err error
	}
	clientDone := make(chan waitOut, 1)
	errOut := &askedSignal{asked: make(chan struct{})}
	// The client asks for Wait, or until the end of the run's budget when that comes first.
	wait := env.WaitBound(m.Opts.Wait)
	go func() {
		req := agentproto.DNSWait{Interval: m.Opts.Interval, Wait: wait.D, Timeout: 2 * time.Second, Names: names}
		cctx, cancel := context.WithTimeout(ctx, wait.D+time.Minute)
		defer cancel()
		var out bytes.Buffer
		if err := kube.ExecStream(cctx, env.Config, env.Client, env.Namespace, client.Name, &out, errOut, agentproto.Argv(req)...); err != nil {
			clientDone <- waitOut{err: fmt.Errorf("exec dns-wait: %v: %s", err, strings.TrimSpace(errOut.String()))}
			return
		}
		ws, err := req.Decode(out.Bytes())
		if err != nil {
			clientDone <- waitOut{err: err}
			return
		}
		clientDone <- waitOut{ws: ws}
	}()
	// The peers are created once the client has asked for every name (its "asked" line).
	select {
	case <-errOut.asked:
	case got := <-clientDone:
		if got.err == nil {
			got.err = fmt.Errorf("dns-wait ended before it asked: %s", strings.TrimSpace(errOut.String()))
		}
		return res, got.err
	case <-ctx.Done():
		return res, ctx.Err()
	}
	created := env.Clock.Now()
	for i := range names {
		p := env.AgentPod(fmt.Sprintf("peer-%d", i), m.Opts.Image, node, agentproto.Pause{}.Args()...)
		p.Labels[roleLabel] = targetRole
		p.Spec.Hostname, p.Spec.Subdomain = p.Name, svcName
		if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("creating %s: %w", p.Name, err)
		}
	}
	got := <-clientDone
	stopWatch()
	if got.err != nil {
		return res, got.err
	}
	_, ready, endpoints := obs.snapshot()
	var targets []Target
	var firstAsk time.Time
	for i, w := range got.ws {
		pod := fmt.Sprintf("peer-%d", i)
		targets = append(targets, Target{Pod: pod, Name: w.Name, Ready: ready[pod], Endpoint: endpoints[pod], Asked: w.FirstAttempt, Resolved: w.Resolved,
			Attempts: w.Attempts, NXDomain: w.NXDomain})
		if firstAsk.IsZero() || w.FirstAttempt.Before(firstAsk) {
			firstAsk = w.FirstAttempt
		}
	}
	m.Report(&res, targets, created, firstAsk, wait)
	return res, nil
}

// Report turns the targets into metrics and per-pod records (pure); wait is how long the client asked. Names
// unresolved when the client stopped at the end of the run's budget say so, and blame nothing (a skip when no
// name resolved).
func (m *Measurement) Report(res *result.Result, targets []Target, created, firstAsk time.Time, wait measure.Bound) {
	lags, unresolved := Analyze(targets, m.Opts.Backoff)
	res.Metrics = append(res.Metrics,
		result.Metric{Name: "pods", Unit: "count", Value: float64(len(targets))},
		result.Metric{Name: "unresolved", Unit: "count", Value: float64(unresolved)})
	switch {
	case unresolved > 0 && wait.Cut:
		res.Reason = fmt.Sprintf("%d of %d names did not resolve%s", unresolved, len(targets), wait.Note())
		if unresolved == len(targets) {
			res.Status = result.StatusSkip
		}
	case unresolved > 0:
		res.Status, res.Reason = result.StatusWarn, fmt.Sprintf("%d of %d names did not resolve within %s of creation", unresolved, len(targets), m.Opts.Wait)
	}
	res.Metrics = append(res.Metrics, lagMetrics(lags, nil)...)
	byPod := map[string]Lags{}
	for _, l := range lags {
		byPod[l.Pod] = l
	}
	for _, t := range targets {
		rec := result.Record{ID: t.Pod, Labels: map[string]string{"name": t.Name},
			Values: map[string]float64{"attempts": float64(t.Attempts), "nxdomain_answers": float64(t.NXDomain)}}
		if l, ok := byPod[t.Pod]; ok {
			rec.Values["dns_lag_seconds"] = l.DNS.Seconds()
			rec.Values["client_backoff_delay_seconds"], rec.Values["client_backoff_extra_seconds"] = l.Client.Seconds(), l.Extra.Seconds()
			if l.HasEndpoint {
				rec.Values["endpoint_lag_seconds"] = l.Endpoint.Seconds()
			}
		}
		res.Records = append(res.Records, rec)
	}
	res.Records = append(res.Records, result.Record{ID: "client", Labels: map[string]string{
		"backoff": fmt.Sprintf("%s x%.0f, cap %s", m.Opts.Backoff.Base, m.Opts.Backoff.Factor, m.Opts.Backoff.Cap),
		"clocks":  "Ready and endpoint times are kubeslow's clock (watch events), resolution times the client pod's node clock",
	}, Values: map[string]float64{"asked_before_peers_created_seconds": created.Sub(firstAsk).Seconds()}})
}

// lagMetrics are the lags' p50, p99 and max (the endpoint/serving split over the peers whose endpoint was
// seen), each with labels.
func lagMetrics(lags []Lags, labels map[string]string) []result.Metric {
	seconds := func(split bool, f func(Lags) time.Duration) []float64 {
		var v []float64
		for _, l := range lags {
			if l.HasEndpoint || !split {
				v = append(v, f(l).Seconds())
			}
		}
		return stats.Sorted(v)
	}
	var out []result.Metric
	for _, s := range []struct {
		name string
		v    []float64
	}{
		{"dns_lag", seconds(false, func(l Lags) time.Duration { return l.DNS })},
		{"endpoint_lag", seconds(true, func(l Lags) time.Duration { return l.Endpoint })},
		{"serving_lag", seconds(true, func(l Lags) time.Duration { return l.Serving })},
		{"client_backoff_delay", seconds(false, func(l Lags) time.Duration { return l.Client })},
		{"client_backoff_extra", seconds(false, func(l Lags) time.Duration { return l.Extra })},
	} {
		if len(s.v) == 0 {
			continue
		}
		for _, q := range []struct {
			n string
			q float64
		}{{"p50", 0.5}, {"p99", 0.99}, {"max", 1}} {
			out = append(out, result.Metric{Name: s.name + "_" + q.n, Unit: "seconds", Value: stats.Percentile(s.v, q.q), Labels: maps.Clone(labels)})
		}
	}
	return out
}

// realNode picks a Ready, schedulable node that is not kwok's (the client must really resolve names).
func realNode(ctx context.Context, env *measure.Env) (string, error) {
	nodes, err := measure.RealNodes(ctx, env)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return "", measure.Skipf("no permission to list nodes: %v", err)
		}
		return "", err
	}
	if len(nodes) == 0 {
		return "", measure.Skipf("no Ready, schedulable real node (kwok's simulated nodes run no resolver)")
	}
	return nodes[0].Name, nil
}

// observer records, by pod hostname (the name's first label; the pod name when it has none), when each pod
// was first seen Running and Ready and when its endpoint was first ready in the Service's EndpointSlices.
type observer struct {
	mu                        sync.Mutex
	now                       func() time.Time
	selector, service         string
	running, ready, endpoints map[string]time.Time
	// onRunning (if set) is called once per pod, when it is first seen Running.
	onRunning func(p *corev1.Pod)
}

func newObserver(env *measure.Env, podSelector, service string) *observer {
	return &observer{now: env.Clock.Now, selector: podSelector, service: service,
		running: map[string]time.Time{}, ready: map[string]time.Time{}, endpoints: map[string]time.Time{}}
}

func hostOf(p *corev1.Pod) string {
	if p.Spec.Hostname != "" {
		return p.Spec.Hostname
	}
	return p.Name
}

func (o *observer) start(ctx context.Context, env *measure.Env) error {
	pw, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: o.selector})
	if err != nil {
		return fmt.Errorf("watching the pods: %w", err)
	}
	sw, err := env.Client.DiscoveryV1().EndpointSlices(env.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + o.service})
	if err != nil {
		pw.Stop()
		return fmt.Errorf("watching the EndpointSlices: %w", err)
	}
	go o.consume(ctx, pw, func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if p.Status.Phase == corev1.PodRunning && o.first(o.running, hostOf(p)) && o.onRunning != nil {
			o.onRunning(p)
		}
		if kube.PodReady(p) {
			o.first(o.ready, hostOf(p))
		}
	})
	go o.consume(ctx, sw, func(obj any) {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			for _, e := range s.Endpoints {
				if e.Hostname != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					o.first(o.endpoints, *e.Hostname)
				}
			}
		}
	})
	return nil
}

func (o *observer) consume(ctx context.Context, w watch.Interface, f func(any)) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				f(ev.Object)
			}
		}
	}
}

// first records now under key unless it is there already; it says whether it did.
func (o *observer) first(m map[string]time.Time, key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := m[key]; !ok {
		m[key] = o.now()
		return true
	}
	return false
}

// snapshot copies what was seen: the watch goroutines may still be delivering a last event.
func (o *observer) snapshot() (running, ready, endpoints map[string]time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.running), maps.Clone(o.ready), maps.Clone(o.endpoints)
}

// askedSignal collects the client's stderr and closes asked at its "asked" line.
type askedSignal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	asked chan struct{}
}

func (a *askedSignal) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf.Write(p)
	if bytes.Contains(a.buf.Bytes(), []byte(agentproto.AskedLine+"\n")) {
		a.once.Do(func() { close(a.asked) })
	}
	return len(p), nil
}

func (a *askedSignal) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.buf.String()
}
