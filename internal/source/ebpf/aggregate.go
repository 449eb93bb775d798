package ebpf

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Key is what the Aggregator counts by: the connecting task's cgroup (a pod's container, once mapped) and
// the destination; or, for NewClientAggregator, the connect's source address (a pod's IP, for a pod with a
// network namespace of its own) and the destination, CgroupID left 0.
type Key struct {
	CgroupID uint64
	Dest     netip.AddrPort
	Client   netip.Addr
}

// Stats is one key's connects since the Aggregator started (or was last Reset).
type Stats struct {
	Key
	// Connects counts every connect that ended, established or failed; Failures the failed ones.
	Connects, Failures int64
	// Slow counts the established connects that took SlowConnect or longer: their first SYN (or its SYN-ACK)
	// was lost and retransmitted after the initial RTO.
	Slow int64
	// PerSecond is Connects over the window (the Aggregator's start or Reset to the Snapshot).
	PerSecond float64
	// P50, P99 and Max are the latencies of the established connects (a failure's time to its RST or
	// timeout is not a connect latency); zero when none was established. Within 1%.
	P50, P99, Max time.Duration
}

// Latencies are recorded in ns from 1ns to 10 minutes (past the SYN retries' ~127s), 2 significant digits
// (a loopback connect takes a few µs): ~33 KiB a key.
const (
	histMin = 1
	histMax = int64(10 * time.Minute)
	histSig = 2
)

// latencies is an HDR histogram of latencies (histMin to histMax ns, histSig digits), as both aggregators
// keep them.
type latencies struct{ h *hdrhistogram.Histogram }

func newLatencies() latencies { return latencies{hdrhistogram.New(histMin, histMax, histSig)} }

// record adds d, clamped to the histogram's range.
func (l latencies) record(d time.Duration) {
	_ = l.h.RecordValue(min(max(int64(d), histMin), histMax)) // in range: cannot fail
}

// quantiles returns the p50, p99 and max; zeros when nothing was recorded.
func (l latencies) quantiles() (p50, p99, maximum time.Duration) {
	if l.h.TotalCount() == 0 {
		return 0, 0, 0
	}
	return time.Duration(l.h.ValueAtQuantile(50)), time.Duration(l.h.ValueAtQuantile(99)), time.Duration(l.h.Max())
}

// window is what both aggregators are: a V and a latency histogram per key K since the window's start, under
// a lock.
type window[K comparable, V any] struct {
	mu    sync.Mutex
	start time.Time
	m     map[K]*windowEntry[V]
}

type windowEntry[V any] struct {
	v    V
	hist latencies
}

func newWindow[K comparable, V any](now time.Time) *window[K, V] {
	return &window[K, V]{start: now, m: map[K]*windowEntry[V]{}}
}

// add runs f on k's entry (a new one, zero with an empty histogram, when k has none), under the lock.
func (w *window[K, V]) add(k K, f func(v *V, hist latencies)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.m[k]
	if e == nil {
		e = &windowEntry[V]{hist: newLatencies()}
		w.m[k] = e
	}
	f(&e.v, e.hist)
}

// snapshot returns stat of every entry, given the window's length in seconds up to now, sorted by order.
func snapshot[K comparable, V, S any](w *window[K, V], now time.Time, stat func(k K, v V, hist latencies, secs float64) S, order func(x, y S) int) []S {
	w.mu.Lock()
	defer w.mu.Unlock()
	secs := now.Sub(w.start).Seconds()
	out := make([]S, 0, len(w.m))
	for k, e := range w.m {
		out = append(out, stat(k, e.v, e.hist, secs))
	}
	slices.SortFunc(out, order)
	return out
}

// reset empties the window and starts a new one at now.
func (w *window[K, V]) reset(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.start, w.m = now, map[K]*windowEntry[V]{}
}

// perSecond is n over secs; 0 for an empty window.
func perSecond(n int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

type connCounts struct{ connects, failures, slow int64 }

// SlowConnect is the connect latency that only a retransmission explains on any path but a satellite's: the
// initial retransmission timeout of a SYN, 1 s (RFC 6298 2.1; Linux's TCP_TIMEOUT_INIT). A connect established
// after it waited for its first SYN (or SYN-ACK) to be sent again; the next tries come at 3, 7, 15 s.
const SlowConnect = time.Second

// Aggregator sums ConnectEvents by Key. It is safe for concurrent use.
type Aggregator struct {
	w        *window[Key, connCounts]
	byClient bool
}

// NewAggregator returns an empty Aggregator by cgroup id and destination whose window starts at now.
func NewAggregator(now time.Time) *Aggregator { return &Aggregator{w: newWindow[Key, connCounts](now)} }

// NewClientAggregator returns an empty Aggregator by source address and destination whose window starts at
// now (as NewDNSClientAggregator: where cgroup ids cannot tell pods apart, their network namespaces can).
func NewClientAggregator(now time.Time) *Aggregator {
	return &Aggregator{w: newWindow[Key, connCounts](now), byClient: true}
}

// Key is the Key ev is counted under.
func (a *Aggregator) Key(ev ConnectEvent) Key {
	if a.byClient {
		return Key{Client: ev.Source.Addr().Unmap(), Dest: ev.Dest}
	}
	return Key{CgroupID: ev.CgroupID, Dest: ev.Dest}
}

// Add counts ev.
func (a *Aggregator) Add(ev ConnectEvent) {
	a.w.add(a.Key(ev), func(c *connCounts, hist latencies) {
		c.connects++
		if ev.Outcome != Established {
			c.failures++
			return
		}
		if ev.Latency >= SlowConnect {
			c.slow++
		}
		hist.record(ev.Latency)
	})
}

// Snapshot returns every key's Stats over the window from the start (or last Reset) to now, by cgroup id
// then destination.
func (a *Aggregator) Snapshot(now time.Time) []Stats {
	return snapshot(a.w, now, func(k Key, c connCounts, hist latencies, secs float64) Stats {
		s := Stats{Key: k, Connects: c.connects, Failures: c.failures, Slow: c.slow, PerSecond: perSecond(c.connects, secs)}
		s.P50, s.P99, s.Max = hist.quantiles()
		return s
	}, func(x, y Stats) int {
		return cmp.Or(cmp.Compare(x.CgroupID, y.CgroupID), x.Client.Compare(y.Client), x.Dest.Compare(y.Dest))
	})
}

// Reset empties the Aggregator and starts a new window at now.
func (a *Aggregator) Reset(now time.Time) { a.w.reset(now) }
