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
// the destination.
type Key struct {
	CgroupID uint64
	Dest     netip.AddrPort
}

// Stats is one key's connects since the Aggregator started (or was last Reset).
type Stats struct {
	Key
	// Connects counts every connect that ended, established or failed; Failures the failed ones.
	Connects, Failures int64
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

type agg struct {
	connects, failures int64
	hist               *hdrhistogram.Histogram
}

// Aggregator sums ConnectEvents by Key. It is safe for concurrent use.
type Aggregator struct {
	mu    sync.Mutex
	start time.Time
	m     map[Key]*agg
}

// NewAggregator returns an empty Aggregator whose window starts at now.
func NewAggregator(now time.Time) *Aggregator {
	return &Aggregator{start: now, m: map[Key]*agg{}}
}

// Add counts ev.
func (a *Aggregator) Add(ev ConnectEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := Key{CgroupID: ev.CgroupID, Dest: ev.Dest}
	e := a.m[k]
	if e == nil {
		e = &agg{hist: hdrhistogram.New(histMin, histMax, histSig)}
		a.m[k] = e
	}
	e.connects++
	if ev.Outcome != Established {
		e.failures++
		return
	}
	_ = e.hist.RecordValue(min(max(int64(ev.Latency), histMin), histMax)) // in range: cannot fail
}

// Snapshot returns every key's Stats over the window from the start (or last Reset) to now, by cgroup id
// then destination.
func (a *Aggregator) Snapshot(now time.Time) []Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	secs := now.Sub(a.start).Seconds()
	out := make([]Stats, 0, len(a.m))
	for k, e := range a.m {
		s := Stats{Key: k, Connects: e.connects, Failures: e.failures}
		if secs > 0 {
			s.PerSecond = float64(e.connects) / secs
		}
		if e.hist.TotalCount() > 0 {
			s.P50 = time.Duration(e.hist.ValueAtQuantile(50))
			s.P99 = time.Duration(e.hist.ValueAtQuantile(99))
			s.Max = time.Duration(e.hist.Max())
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y Stats) int {
		return cmp.Or(cmp.Compare(x.CgroupID, y.CgroupID), x.Dest.Compare(y.Dest))
	})
	return out
}

// Reset empties the Aggregator and starts a new window at now.
func (a *Aggregator) Reset(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.start, a.m = now, map[Key]*agg{}
}
