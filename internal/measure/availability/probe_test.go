package availability

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// hangable is an apiserver's /readyz that hangs (as a SIGSTOPped process holding its socket) while told to:
// the whole apiserver, or only its etcd checks (the whole /readyz; /readyz?exclude=etcd answers).
type hangable struct {
	all, etcd atomic.Bool
	arrived   atomic.Int64
	release   chan struct{}
	once      sync.Once
}

func (h *hangable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.arrived.Add(1)
	withEtcd := len(r.URL.Query()["exclude"]) == 0
	if h.all.Load() || (withEtcd && h.etcd.Load()) {
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		return
	}
	_, _ = w.Write([]byte("[+]ping ok\nreadyz check passed\n"))
}

func (h *hangable) thaw() { h.once.Do(func() { close(h.release) }) }

// probeRun drives the observer over a fake clock, one tick a second: before tick k, set(k) says what hangs;
// each tick waits for its two requests to reach the server and for the answers it expects, then the clock
// steps a whole second at once (past the probes' time-out and onto the next tick). A tick whose requests do
// not arrive within 5 s of real time fails the test: the loop waited on a hung probe.
func probeRun(t *testing.T, ticks int, set func(h *hangable, k int)) (result.Result, time.Time) {
	t.Helper()
	h := &hangable{release: make(chan struct{})}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.thaw()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	env := &measure.Env{Config: &rest.Config{Host: srv.URL}, Clock: clk}
	m := New(time.Minute)
	obs, err := m.Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	o := obs.(*observation)
	answers := int64(0)
	for k := range ticks {
		if k > 0 {
			set(h, k)
			clk.Step(time.Second)
		} else {
			set(h, 0)
		}
		if k == 0 && (h.all.Load() || h.etcd.Load()) {
			t.Fatal("the first tick must answer")
		}
		hung := 0
		if h.all.Load() {
			hung = 2
		} else if h.etcd.Load() {
			hung = 1
		}
		answers += int64(2 - hung)
		want := 2 * int64(k+1)
		waiters := 1 // the loop's timer for the next tick
		if hung > 0 {
			waiters = 2 // and this tick's time-out
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
			return h.arrived.Load() >= want && o.answered.Load() >= answers && clk.Waiters() == waiters, nil
		})
		cancel()
		if err != nil {
			t.Fatalf("tick %d (at +%d s): %d of %d requests arrived, %d of %d answers read, %d timers: the probes did not keep their cadence",
				k, k, h.arrived.Load(), want, o.answered.Load(), answers, clk.Waiters())
		}
	}
	h.thaw()
	r, err := obs.Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r, t0
}

func metric(t *testing.T, r result.Result, name string) float64 {
	t.Helper()
	m := r.Metric(name, nil)
	if m == nil {
		t.Fatalf("no %s in %+v", name, r.Metrics)
	}
	return m.Value
}

// TestProbeFrozenAPIServer: kube-apiserver frozen (its /readyz hangs) from +3 s for 8 ticks. Each tick's probe
// fails at its time-out and the next one starts on time (the probe used to wait up to 5 s on the hung server,
// and a stop of 8 s measured 0 s unreachable): an unreachable window of the blocked span, each probe a second
// apart, and no etcd window (etcd's state was unseen, not failing).
func TestProbeFrozenAPIServer(t *testing.T) {
	const from, n, ticks = 3, 8, 14
	r, t0 := probeRun(t, ticks, func(h *hangable, k int) { h.all.Store(k >= from && k < from+n) })
	if got := metric(t, r, MetricProbes); got != ticks {
		t.Errorf("%v probes in %d ticks", got, ticks)
	}
	blocked := float64(n) // seconds of the fake clock the server hung
	if got := metric(t, r, MetricUnreachableLongest); got < blocked-ProbeEvery.Seconds() || got > blocked+ProbeEvery.Seconds() {
		t.Errorf("unreachable longest %.1f s, the apiserver hung %.0f s", got, blocked)
	}
	if got := metric(t, r, MetricEtcdUnavailable); got != 0 {
		t.Errorf("etcd unavailable %.1f s while only the apiserver hung", got)
	}
	ws := Outages(r)
	if len(ws) != 1 || ws[0].Cause != CauseUnreachable || !ws[0].Start.Equal(t0.Add(from*time.Second)) || !ws[0].End.Equal(t0.Add((from+n)*time.Second)) || ws[0].Probes != n {
		t.Errorf("windows %+v", ws)
	}
	var last time.Time
	for i, p := range r.Series[0].Points {
		if i > 0 && p.T.Sub(last) != ProbeEvery {
			t.Errorf("probe %d %s after the one before", i, p.T.Sub(last))
		}
		last = p.T
	}
}

// TestProbeEtcdAndAPIServer: etcd's checks hang from +3 s for 10 ticks, and the apiserver itself from +6 s for
// 3 of them. The apiserver's probe answering while the whole /readyz does not is etcd's stall; the apiserver's
// outage is named apart, inside it, and the stall runs through the ticks where etcd's state was unseen.
func TestProbeEtcdAndAPIServer(t *testing.T) {
	r, t0 := probeRun(t, 16, func(h *hangable, k int) {
		h.etcd.Store(k >= 3 && k < 13)
		h.all.Store(k >= 6 && k < 9)
	})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ws := Outages(r)
	if len(ws) != 2 || ws[0].Cause != CauseEtcd || !ws[0].Start.Equal(at(3)) || !ws[0].End.Equal(at(13)) || ws[0].Probes != 7 ||
		ws[1].Cause != CauseUnreachable || !ws[1].Start.Equal(at(6)) || !ws[1].End.Equal(at(9)) {
		t.Fatalf("windows %+v", ws)
	}
	if metric(t, r, MetricEtcdLongest) != 10 || metric(t, r, MetricUnreachableLongest) != 3 {
		t.Errorf("metrics %+v", r.Metrics)
	}
	if r.Status != result.StatusWarn {
		t.Errorf("status %s %q", r.Status, r.Reason)
	}
}

// TestEtcdViewStarvedAPIServer: the whole /readyz timing out is etcd's stall only when the same tick's probe of
// the apiserver itself answered at once; a starved apiserver (a CPU quota of 0.1 core answered the light probe
// in 0.5 s and let the whole one time out, and the run called it an etcd stall of 16.8 s) leaves etcd unknown.
func TestEtcdViewStarvedAPIServer(t *testing.T) {
	late := Probe{Cause: CauseUnreachable, Latency: ProbeTimeout, Err: "no answer"}
	fast := ProbeTimeout / 4
	for _, c := range []struct {
		name string
		api  Probe
		want string
	}{
		{"apiserver answered at once", Probe{OK: true, Latency: 20 * time.Millisecond}, CauseEtcd},
		{"apiserver answered late", Probe{OK: true, Latency: 500 * time.Millisecond}, CauseUnknown},
		{"apiserver did not answer", late, CauseUnknown},
	} {
		if got := etcdView(c.api, late, fast); got.Cause != c.want || got.OK || got.Target != TargetEtcd {
			t.Errorf("%s: etcd %+v, want cause %q", c.name, got, c.want)
		}
	}
	failing := Probe{Cause: CauseEtcd, Failing: []string{"etcd"}, Latency: 600 * time.Millisecond}
	if got := etcdView(Probe{OK: true, Latency: 500 * time.Millisecond}, failing, fast); got.Cause != CauseEtcd {
		t.Errorf("an explicit failing etcd check behind a slow apiserver: %+v", got)
	}
}
