// Package availability is controlplane.availability: kubeslow's own probe of the apiserver's /readyz every
// second for the whole run, so that a run names the outages it lived through — etcd not answering the
// apiserver (readyz's etcd check failing), the apiserver itself unreachable — and marks the measurements
// they interrupted, instead of reading its own missing data as a slow cluster.
package availability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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

// ProbeEvery is the probes' period; ProbeTimeout bounds each probe, below the period: a frozen apiserver or
// etcd costs one failed probe a second, never a wait that delays the next one. Each tick sends two probes at
// once: /readyz without its etcd checks (the apiserver itself: it answers in milliseconds when it runs) and the
// whole /readyz (etcd, as the apiserver sees it). The apiserver's own etcd check waits up to 2 s
// (--etcd-healthcheck-timeout), but it runs at most once a second and the others get its last error at once;
// the whole /readyz timing out while the same tick's /readyz without etcd answered at once (within a quarter
// of the time-out) is etcd not answering; behind a slow answer it is a starved apiserver, and etcd is unknown.
const (
	ProbeEvery   = time.Second
	ProbeTimeout = 800 * time.Millisecond
)

// The two probes of a tick.
const (
	TargetAPIServer = "apiserver" // /readyz?exclude=etcd&exclude=etcd-readiness: the apiserver itself
	TargetEtcd      = "etcd"      // the whole /readyz: its etcd checks, read beside the apiserver's probe
)

// Measurement is the observer.
type Measurement struct{ window, every, timeout time.Duration }

// New returns the observer with the run's least window, probing every ProbeEvery.
func New(window time.Duration) *Measurement {
	return &Measurement{window: window, every: ProbeEvery, timeout: ProbeTimeout}
}

// Cadence sets the probes' period and each probe's time-out (which stays below the period).
func (m *Measurement) Cadence(every, timeout time.Duration) *Measurement {
	m.every, m.timeout = every, min(timeout, every*9/10)
	return m
}

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "the apiserver's /readyz probed every second for the whole run: etcd stalls and apiserver outages it lived through"
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.window }

// Run implements measure.Measurement: the observer on its own over its window.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

type getter func(ctx context.Context, withEtcd bool) ([]byte, error)

// readyz is one probe's request: no client-side retry (client-go retries a GET on a reset connection after a
// second, up to ten times: a probe would wait out its outage instead of failing), no rate limit of the run's.
func readyz(c rest.Interface, ctx context.Context, withEtcd bool) ([]byte, error) {
	req := c.Get().AbsPath("/readyz").Param("verbose", "").MaxRetries(0)
	if !withEtcd {
		req = req.Param("exclude", "etcd").Param("exclude", "etcd-readiness")
	}
	return req.DoRaw(ctx)
}

// Start implements measure.Observer: the probes run on their own cadence, each tick's in goroutines of their
// own, on a client of their own (kubeslow's shared limiter may be cut to 1 request/s by APF rejections: the
// probe must keep its period) whose requests are bounded only by each probe's time-out.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	get := func(ctx context.Context, withEtcd bool) ([]byte, error) {
		return readyz(env.Client.Discovery().RESTClient(), ctx, withEtcd)
	}
	if env.Config != nil {
		cfg := rest.CopyConfig(env.Config)
		cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
		cfg.Timeout = 0 // each probe's context bounds it (a client time-out would add ?timeout= and a second clock)
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		get = func(ctx context.Context, withEtcd bool) ([]byte, error) {
			return readyz(c.Discovery().RESTClient(), ctx, withEtcd)
		}
	}
	lctx, stop := context.WithCancel(ctx)
	o := &observation{start: env.Clock.Now(), every: m.every, timeout: m.timeout, stop: stop, finished: make(chan struct{})}
	go o.loop(lctx, env, get)
	return o, nil
}

type observation struct {
	start          time.Time
	every, timeout time.Duration
	mu             sync.Mutex
	probes         []Probe
	stop           context.CancelFunc
	finished       chan struct{}
	// answered counts the answers the ticks received (not timed out), for tests to step a fake clock by.
	answered atomic.Int64
}

// loop starts a tick every period, on the period's own schedule: a tick never waits for the one before
// (its probes run in their own goroutines), and ticks the process itself missed are skipped, not bunched.
func (o *observation) loop(ctx context.Context, env *measure.Env, get getter) {
	defer close(o.finished)
	var wg sync.WaitGroup
	defer wg.Wait()
	next := env.Clock.Now()
	for {
		t := next
		wg.Go(func() { o.tick(ctx, env, get, t) })
		now := env.Clock.Now()
		for next = next.Add(o.every); !next.After(now); next = next.Add(o.every) {
		}
		timer := env.Clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// tick sends the tick's two probes at once and waits for both or the time-out: a probe that has not
// answered by then failed (it is cancelled). A tick cut short by the end of the run records nothing.
func (o *observation) tick(ctx context.Context, env *measure.Env, get getter, t time.Time) {
	type answer struct {
		etcd bool
		body []byte
		err  error
		lat  time.Duration
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan answer, 2)
	for _, withEtcd := range []bool{false, true} {
		go func() {
			body, err := get(pctx, withEtcd)
			ch <- answer{etcd: withEtcd, body: body, err: err, lat: env.Clock.Since(t)}
		}()
	}
	timer := env.Clock.NewTimer(o.timeout)
	defer timer.Stop()
	var api, full *Probe
	for api == nil || full == nil {
		select {
		case <-ctx.Done():
			return
		case a := <-ch:
			o.answered.Add(1)
			p := Classify(a.body, a.err)
			p.T, p.Latency = t, a.lat
			if a.etcd {
				full = &p
			} else {
				api = &p
			}
		case <-timer.C():
			late := Probe{T: t, Latency: o.timeout, Cause: CauseUnreachable, Err: fmt.Sprintf("no answer within %s", o.timeout)}
			if api == nil {
				api = &late
			}
			if full == nil {
				late.Err = fmt.Sprintf("readyz with its etcd checks: no answer within %s", o.timeout)
				full = &late
			}
		}
	}
	api.Target = TargetAPIServer
	e := etcdView(*api, *full, o.timeout/4)
	o.mu.Lock()
	o.probes = append(o.probes, *api, e)
	o.mu.Unlock()
}

// etcdView reads etcd's state from the whole /readyz beside the same tick's probe of the apiserver: failing
// when its etcd checks alone failed, or when it did not answer in time while the apiserver answered at once
// (within fast of the tick, a quarter of the probe time-out: it runs, and only the etcd check held the whole
// /readyz); unknown when the apiserver itself did not answer, answered late (a starved apiserver is slow on both, and its whole /readyz,
// which does more, times out first: that is not etcd's outage), or was starting.
func etcdView(api, full Probe, fast time.Duration) Probe {
	e := full
	e.Target = TargetEtcd
	switch {
	case full.OK || full.Cause == CauseForbidden || full.Cause == CauseEtcd:
	case full.Cause == CauseNotReady && !slices.ContainsFunc(full.Failing, isEtcdCheck):
		e.OK, e.Cause, e.Failing = true, "", nil // its other checks failed; etcd's passed
	case full.Cause == CauseUnreachable && api.OK && api.Latency <= fast:
		e.Cause = CauseEtcd // the apiserver answered at once without its etcd checks, not with them
	default:
		e.Cause = CauseUnknown
	}
	return e
}

func isEtcdCheck(c string) bool { return c == "etcd" || c == "etcd-readiness" }

// Sample implements measure.Observation: the probe samples on its own period.
func (o *observation) Sample(context.Context) {}

// Gather implements measure.Observation: the probes in time order (ticks finish out of order).
func (o *observation) Gather(context.Context) (result.Result, error) {
	o.stop()
	<-o.finished
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.probes) == 0 {
		return result.Result{}, errors.New("no probe of /readyz completed")
	}
	slices.SortStableFunc(o.probes, func(a, b Probe) int { return a.T.Compare(b.T) })
	return Analyze(o.probes), nil
}

// Cause of a failed probe.
const (
	CauseEtcd        = "etcd"        // the apiserver answered, its etcd check failing
	CauseNotReady    = "not-ready"   // the apiserver answered, other checks failing
	CauseUnreachable = "unreachable" // no answer (connection refused, reset, timed out)
	CauseForbidden   = "forbidden"   // no permission: not an outage
	CauseUnknown     = "unknown"     // etcd's probe when the apiserver did not answer: etcd's state unseen
)

// Probe is one /readyz probe.
type Probe struct {
	// Target is what the probe reads: TargetAPIServer, TargetEtcd, or "" for one whole /readyz read as both.
	Target  string
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
		if isEtcdCheck(c) {
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
