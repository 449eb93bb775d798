// Package availability is controlplane.availability: kubeslow's own probe of the apiserver's /readyz every
// second for the whole run, so that a run names the outages it lived through — etcd not answering the
// apiserver (readyz's etcd check failing), the apiserver itself unreachable — and marks the measurements
// they interrupted, instead of reading its own missing data as a slow cluster.
package availability

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "controlplane.availability"

// ProbeEvery is the probe's period; ProbeTimeout bounds one probe (above the apiserver's own 2 s
// --etcd-healthcheck-timeout, so a stalled etcd shows as readyz's failing check, not a probe time-out).
const (
	ProbeEvery   = time.Second
	ProbeTimeout = 5 * time.Second
)

// Measurement is the observer.
type Measurement struct{ window time.Duration }

// New returns the observer with the run's least window.
func New(window time.Duration) *Measurement { return &Measurement{window: window} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "the apiserver's /readyz probed every second for the whole run: etcd stalls and apiserver outages it lived through"
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.window }

// Permissions implements measure.Permissioned.
func (*Measurement) Permissions() []measure.Permission {
	return []measure.Permission{{Verbs: []string{"get"}, NonResourceURL: "/readyz", Reason: "the apiserver's readiness and its failing checks (etcd)"}}
}

// Run implements measure.Measurement: the observer on its own over its window.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

// Start implements measure.Observer: the probe runs in its own goroutine, on its own client-side limiter
// (kubeslow's shared one may be cut to 1 request/s by APF rejections: the probe must keep its period).
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	get := func(ctx context.Context) ([]byte, error) {
		return env.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "").DoRaw(ctx)
	}
	if env.Config != nil {
		cfg := rest.CopyConfig(env.Config)
		cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
		cfg.Timeout = ProbeTimeout
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		get = func(ctx context.Context) ([]byte, error) {
			return c.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "").DoRaw(ctx)
		}
	}
	o := &observation{start: env.Clock.Now(), done: make(chan struct{}), finished: make(chan struct{})}
	go o.loop(ctx, env, get)
	return o, nil
}

type observation struct {
	start    time.Time
	mu       sync.Mutex
	probes   []Probe
	done     chan struct{}
	finished chan struct{}
	stopOnce sync.Once
}

func (o *observation) loop(ctx context.Context, env *measure.Env, get func(context.Context) ([]byte, error)) {
	defer close(o.finished)
	for {
		t := env.Clock.Now()
		pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		body, err := get(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		p := Classify(body, err)
		p.T, p.Latency = t, env.Clock.Since(t)
		o.mu.Lock()
		o.probes = append(o.probes, p)
		o.mu.Unlock()
		select {
		case <-o.done:
			return
		case <-ctx.Done():
			return
		case <-env.Clock.After(ProbeEvery - min(env.Clock.Since(t), ProbeEvery)):
		}
	}
}

// Sample implements measure.Observation: the probe samples on its own period.
func (o *observation) Sample(context.Context) {}

// Gather implements measure.Observation.
func (o *observation) Gather(context.Context) (result.Result, error) {
	o.stopOnce.Do(func() { close(o.done) })
	<-o.finished
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.probes) == 0 {
		return result.Result{}, errors.New("no probe of /readyz completed")
	}
	return Analyze(o.probes), nil
}

// Cause of a failed probe.
const (
	CauseEtcd        = "etcd"        // the apiserver answered, its etcd check failing
	CauseNotReady    = "not-ready"   // the apiserver answered, other checks failing
	CauseUnreachable = "unreachable" // no answer (connection refused, reset, timed out)
	CauseForbidden   = "forbidden"   // no permission: not an outage
)

// Probe is one /readyz probe.
type Probe struct {
	T       time.Time
	Latency time.Duration
	// OK is a 200; otherwise Cause says why, Failing lists the checks the apiserver said failed.
	OK      bool
	Cause   string
	Failing []string
	Err     string
}

// Classify reads one probe's answer: the body of /readyz?verbose ("[+]ping ok", "[-]etcd failed: reason
// withheld"...) or the error that replaced it.
func Classify(body []byte, err error) Probe {
	if err == nil {
		return Probe{OK: true}
	}
	var se *apierrors.StatusError
	p := Probe{Err: err.Error()}
	if !errors.As(err, &se) {
		p.Cause = CauseUnreachable
		return p
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		p.Cause = CauseForbidden
		return p
	}
	if len(body) == 0 {
		if d := se.ErrStatus.Details; d != nil {
			for _, c := range d.Causes {
				body = append(body, c.Message...)
				body = append(body, '\n')
			}
		}
		body = append(body, se.ErrStatus.Message...)
	}
	p.Failing = failingChecks(body)
	// etcd's checks alone: etcd does not answer a running apiserver. With other checks (post-start hooks,
	// informer sync) failing too, the apiserver itself is starting (a restart): not ready, not etcd's stall.
	p.Cause = CauseNotReady
	etcd := 0
	for _, c := range p.Failing {
		if c == "etcd" || c == "etcd-readiness" {
			etcd++
		}
	}
	if etcd > 0 && etcd == len(p.Failing) {
		p.Cause = CauseEtcd
	}
	return p
}

// failingChecks are the names in "[-]name failed" lines.
func failingChecks(body []byte) []string {
	var out []string
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(line) > 3 && string(line[:3]) == "[-]" {
			name := line[3:]
			if i := bytes.IndexByte(name, ' '); i >= 0 {
				name = name[:i]
			}
			if len(name) > 0 && len(out) < 32 {
				out = append(out, string(name))
			}
		}
	}
	return out
}
