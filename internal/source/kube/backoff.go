package kube

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// AIMD parameters of kubeslow's client-side rate (docs/faults.md states them).
const (
	// DecreaseOn429 multiplies the rate when the apiserver rejects a request with 429 (APF or max-inflight).
	DecreaseOn429 = 0.5
	// DecreaseOnSlow multiplies the rate when a request (not a watch) took longer than SlowResponse.
	DecreaseOnSlow = 0.8
	// SlowResponse is the latency above which a response is a congestion signal: the apiserver's own SLO for
	// a mutating or single-object call is 1 s at p99 (the Kubernetes API call latency SLO).
	SlowResponse = time.Second
	// SlowList is the same for a LIST: the SLO's 30 s for a cluster-wide LIST (a LIST of many objects is
	// slow by its size, not by congestion).
	SlowList = 30 * time.Second
	// DecreaseHold is the least time between two decreases: one window of rejections halves the rate once,
	// not once per rejected request.
	DecreaseHold = time.Second
	// IncreasePerSecond is the additive increase: the rate grows by this many requests/s for every second
	// without a congestion signal, up to the configured rate.
	IncreasePerSecond = 1.0
	// MinRate is the floor: kubeslow never stops sending (it must still clean up).
	MinRate = 1.0
)

// Backoff is kubeslow's client-side rate limiter (client-go's flowcontrol.RateLimiter): a token bucket whose
// rate follows AIMD — halved when the apiserver answers 429, cut by a fifth when a response is slow, raised
// by IncreasePerSecond for every second without either, never above the configured rate nor below MinRate.
// Every request of a run (its reads, the load generators' creates, retries after a Retry-After) waits on the
// same bucket, so kubeslow's load yields while the apiserver is overloaded. It also counts the responses by
// status code, which the run reports as kubeslow's own status.
type Backoff struct {
	lim *rate.Limiter
	now func() time.Time

	mu        sync.Mutex
	max       float64
	cur       float64
	lastDown  time.Time
	lastUp    time.Time
	codes     map[int]int
	errors    int
	slow      int
	decreases int
	min       float64
	points    []RatePoint
	stopped   bool
}

// RatePoint is the client's rate from At on.
type RatePoint struct {
	At   time.Time
	Rate float64
}

// maxPoints bounds the rate history (a long run under APF changes rate at most once a second).
const maxPoints = 2000

// NewBackoff returns a limiter at qps with the given burst.
func NewBackoff(qps float32, burst int) *Backoff {
	return newBackoff(float64(qps), burst, time.Now)
}

func newBackoff(qps float64, burst int, now func() time.Time) *Backoff {
	qps = max(qps, MinRate)
	b := &Backoff{lim: rate.NewLimiter(rate.Limit(qps), max(burst, 1)), now: now, max: qps, cur: qps, min: qps, codes: map[int]int{}}
	t := now()
	b.lastUp = t
	b.points = []RatePoint{{At: t, Rate: qps}}
	return b
}

// TryAccept implements flowcontrol.PassiveRateLimiter.
func (b *Backoff) TryAccept() bool {
	if b.isStopped() {
		return false
	}
	return b.lim.AllowN(b.now(), 1)
}

// Accept implements flowcontrol.RateLimiter.
func (b *Backoff) Accept() { _ = b.lim.Wait(context.Background()) }

// Wait implements flowcontrol.RateLimiter.
func (b *Backoff) Wait(ctx context.Context) error { return b.lim.Wait(ctx) }

// Stop implements flowcontrol.PassiveRateLimiter.
func (b *Backoff) Stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
}

func (b *Backoff) isStopped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// QPS implements flowcontrol.PassiveRateLimiter: the current rate.
func (b *Backoff) QPS() float32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return float32(b.cur)
}

// Observe feeds one response back: its status code (0 for a transport error), its latency, and the
// latency above which it is slow (0: never, for long-running requests such as watches).
func (b *Backoff) Observe(code int, latency, slowAfter time.Duration) {
	t := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if code == 0 {
		b.errors++
	} else {
		b.codes[code]++
	}
	switch {
	case code == http.StatusTooManyRequests:
		b.decrease(t, DecreaseOn429)
	case slowAfter > 0 && code != 0 && latency > slowAfter:
		b.slow++
		b.decrease(t, DecreaseOnSlow)
	case code != 0 && code < 500:
		// Additive increase, in proportion to the time since the last change.
		if dt := t.Sub(b.lastUp); dt >= 100*time.Millisecond && b.cur < b.max && t.Sub(b.lastDown) >= DecreaseHold {
			b.set(t, min(b.max, b.cur+IncreasePerSecond*dt.Seconds()))
			b.lastUp = t
		} else if b.cur >= b.max {
			b.lastUp = t
		}
	}
}

func (b *Backoff) decrease(t time.Time, factor float64) {
	if !b.lastDown.IsZero() && t.Sub(b.lastDown) < DecreaseHold {
		return
	}
	b.lastDown, b.lastUp = t, t
	b.decreases++
	b.set(t, max(MinRate, b.cur*factor))
}

func (b *Backoff) set(t time.Time, r float64) {
	if r == b.cur {
		return
	}
	b.cur = r
	b.min = min(b.min, r)
	b.lim.SetLimitAt(t, rate.Limit(r))
	if len(b.points) < maxPoints {
		b.points = append(b.points, RatePoint{At: t, Rate: r})
	} else {
		b.points[len(b.points)-1] = RatePoint{At: t, Rate: r}
	}
}

// BackoffStats is what the limiter saw over a run.
type BackoffStats struct {
	// Configured is the rate kubeslow started at (its --qps plus the benchmarks' headroom); Min the lowest
	// it fell to; Final the rate at the end.
	Configured, Min, Final float64
	// Throttled counts 429 responses, Slow the responses slower than SlowResponse, Decreases the rate cuts,
	// TransportErrors the requests that got no response (apiserver down or unreachable).
	Throttled, Slow, Decreases, TransportErrors int
	// Codes counts the responses by HTTP status code, sorted by code.
	Codes []CodeCount
	// Rate is the rate's history: one point per change.
	Rate []RatePoint
}

// CodeCount is the number of responses with one status code.
type CodeCount struct{ Code, N int }

// Stats returns a copy of what the limiter saw.
func (b *Backoff) Stats() BackoffStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BackoffStats{Configured: b.max, Min: b.min, Final: b.cur, Throttled: b.codes[http.StatusTooManyRequests], Slow: b.slow,
		Decreases: b.decreases, TransportErrors: b.errors, Rate: append([]RatePoint(nil), b.points...)}
	for c, n := range b.codes {
		s.Codes = append(s.Codes, CodeCount{c, n})
	}
	sort.Slice(s.Codes, func(i, j int) bool { return s.Codes[i].Code < s.Codes[j].Code })
	return s
}

// Summary says, in one sentence, whether kubeslow was throttled and what it did; empty when it never was
// (no 429 and no slow response).
func (s BackoffStats) Summary() string {
	if s.Throttled == 0 && s.Slow == 0 {
		return ""
	}
	var why string
	switch {
	case s.Throttled > 0 && s.Slow > 0:
		why = fmt.Sprintf("kubeslow was throttled by the apiserver (429, APF) %d times and saw %d responses slower than %s", s.Throttled, s.Slow, SlowResponse)
	case s.Throttled > 0:
		why = fmt.Sprintf("kubeslow was throttled by the apiserver (429, APF) %d times", s.Throttled)
	default:
		why = fmt.Sprintf("kubeslow saw %d responses slower than %s", s.Slow, SlowResponse)
	}
	return fmt.Sprintf("%s; its request rate fell from %.3g/s to %.3g/s (%.3g/s at the end)", why, s.Configured, s.Min, s.Final)
}

// Wrap returns a round tripper that feeds every response back to the limiter (for rest.Config.Wrap).
func (b *Backoff) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		start := b.now()
		resp, err := rt.RoundTrip(r)
		code := 0
		if err == nil {
			code = resp.StatusCode
		}
		slowAfter := SlowResponse
		switch {
		case longRunning(r):
			slowAfter = 0
		case Classify(r.Method, r.URL.Path, r.URL.Query().Get("watch")).Verb == "list":
			slowAfter = SlowList
		}
		b.Observe(code, b.now().Sub(start), slowAfter)
		return resp, err
	})
}

// longRunning reports whether a request's duration says nothing about the apiserver's load: a watch, a
// followed log, or a call the apiserver passes on to a kubelet or a pod (proxy, exec, logs, port-forward).
func longRunning(r *http.Request) bool {
	q := r.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" || q.Get("follow") == "true" {
		return true
	}
	for _, sub := range []string{"/proxy", "/exec", "/log", "/attach", "/portforward"} {
		if strings.Contains(r.URL.Path, sub) {
			return true
		}
	}
	return false
}
