package dnsload

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func upstream(t *testing.T, u *Upstream) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- u.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addr <- a.String() }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatal(err)
	}
	return ""
}

var mix = []Query{
	{Name: "a.ext.example.", Type: dns.TypeA, Kind: KindExternal},
	{Name: "b.ext.example.", Type: dns.TypeA, Kind: KindExternal},
	{Name: "nothing.invalid.", Type: dns.TypeA, Kind: KindNX},
}

// TestRunCounts: every planned query leaves, is answered once, and the rcodes are counted by kind.
func TestRunCounts(t *testing.T) {
	srv := upstream(t, &Upstream{Zone: "ext.example", Addr: net.ParseIP("198.18.0.80")})
	// A time-out far past any answer's (Run ends once all are in): an answer a starved scheduler delayed is not
	// taken for a lost query.
	res, err := Run(context.Background(), Config{Server: srv, Names: mix, Rate: 1500, Duration: time.Second, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.Sent != res.Planned || res.Planned != 1500 || c.Answered != c.Sent || c.Timeouts != 0 {
		t.Fatalf("counts %+v planned %d", c, res.Planned)
	}
	if c.NXDomain != 500 || res.ByKind[KindNX].NXDomain != 500 || res.ByKind[KindExternal].NoError != 1000 {
		t.Fatalf("rcodes %+v by kind nx %+v ext %+v", c, *res.ByKind[KindNX], *res.ByKind[KindExternal])
	}
	if res.P(0.5) <= 0 || res.P(0.99) < res.P(0.5) {
		t.Fatalf("latency p50 %g p99 %g", res.P(0.5), res.P(0.99))
	}
	t.Logf("answered %.0f/s p50 %.3f ms p99 %.3f ms, sends late p99 %d µs", res.AnsweredPerSecond(), res.P(0.5)*1e3, res.P(0.99)*1e3, res.SchedLate.ValueAtQuantile(99))
}

// TestPerSourceLimit: one source at three times the upstream's per-source limit gets about the limit answered
// (plus the bucket's first second) and the rest dropped: timeouts, as case B's clients saw.
func TestPerSourceLimit(t *testing.T) {
	u := &Upstream{Zone: "ext.example", Addr: net.ParseIP("198.18.0.80"), Limit: 200}
	srv := upstream(t, u)
	res, err := Run(context.Background(), Config{Server: srv, Names: mix[:2], Rate: 600, Duration: 2 * time.Second, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// 1,200 sent in 2 s; the bucket lets 200 (its first second) + 200 per second through: ~600 when the
	// sends keep their schedule, every other one dropped and timed out. Bounds that hold however the machine
	// schedules them (a starved one delays sends into bursts and answers past the time-out):
	//   - the upstream lets the bucket's first 200 through, and drops some;
	//   - every drop is a timeout, and the generator counts no answer the upstream did not give;
	//   - an answered query was let through at most its latency after its intended time (<= 2 s), so the
	//     bucket had at most 200 + 200 x (2 s + the largest latency) to give.
	c := res.Counts
	answered, dropped := u.Counts()
	up, dr := answered["127.0.0.1"], dropped["127.0.0.1"]
	span := 2 + float64(res.Latency.Max())/1e6
	if c.Sent != 1200 || c.Answered+c.Timeouts != c.Sent || up < 200 || dr == 0 || up+dr > c.Sent ||
		c.Timeouts < dr || c.Answered > up || float64(c.Answered) > 200*(1+span)+1 {
		t.Fatalf("upstream answered %d dropped %d, generator %+v, span %.2f s", up, dr, c, span)
	}
	t.Logf("failed share %.2f (%d of %d), span %.2f s", res.FailedShare(), c.Timeouts, c.Sent, span)
	rc := DefaultRamp(Config{})
	if rc.Breaks(res) == "" {
		t.Fatal("a step with half the queries failed breaks no threshold")
	}
}

// TestLatencyFromIntendedTime: a server that holds every answer until 300 ms after the first query is
// charged, for each query, from when it should have left: p50 near 150 ms and p99 near 300 ms (a closed-loop
// client would have sent one query and seen one slow answer).
func TestLatencyFromIntendedTime(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	_ = pc.(*net.UDPConn).SetReadBuffer(socketBuffer) // as the Upstream's: a starved test must not drop queries
	go func() {
		type q struct {
			b    []byte
			from net.Addr
		}
		var held []q
		var first time.Time
		buf := make([]byte, 512)
		for {
			_ = pc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			n, from, err := pc.ReadFrom(buf)
			if err == nil {
				if first.IsZero() {
					first = time.Now()
				}
				b := append([]byte(nil), buf[:n]...)
				b[2] |= 0x80
				held = append(held, q{b, from})
			} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				return
			}
			if !first.IsZero() && time.Since(first) > 300*time.Millisecond {
				for _, h := range held {
					_, _ = pc.WriteTo(h.b, h.from)
				}
				held = nil
			}
		}
	}()
	res, err := Run(context.Background(), Config{Server: pc.LocalAddr().String(), Names: mix, Rate: 1000, Duration: 300 * time.Millisecond, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Answered != res.Planned {
		t.Fatalf("counts %+v", res.Counts)
	}
	// Lower bounds only (every answer came within the time-out): the machine's scheduling adds to both; the
	// point is that they are not near zero, as a closed-loop client's would be.
	if p50, p99 := res.P(0.5), res.P(0.99); p50 < 0.05 || p99 < 0.25 || p99 < p50 {
		t.Fatalf("p50 %.3f s p99 %.3f s", p50, p99)
	}
}

// TestRampStopsAtLimit: the ramp doubles until the per-source limit breaks the failure threshold, and stops
// there. Only the failure threshold is in play (latency and achieved-rate lines are set out of reach: this
// is not a timing test), with a 10% line that the 800 q/s step crosses by its 200 dropped queries (17%).
func TestRampStopsAtLimit(t *testing.T) {
	srv := upstream(t, &Upstream{Zone: "ext.example", Addr: net.ParseIP("198.18.0.80"), Limit: 400})
	// A time-out long enough that a starved scheduler's late answers do not break a step: only the last step,
	// whose drops never answer, waits it out.
	rc := DefaultRamp(Config{Server: srv, Names: mix[:2], Timeout: 10 * time.Second})
	rc.Start, rc.StepDuration, rc.MaxSteps = 100, 1500*time.Millisecond, 6
	rc.P99Max, rc.MinAchieved, rc.FailMax = time.Minute, 0, 0.1
	steps, err := Ramp(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	last := steps[len(steps)-1]
	fail := func(why string) {
		for _, s := range steps {
			t.Logf("%.0f/s: %+v %s (sends late p99 %d µs)", s.Rate, s.Counts, s.Broke, s.SchedLate.ValueAtQuantile(99))
		}
		t.Fatalf("%s: %d steps, last %.0f/s broke %q", why, len(steps), last.Rate, last.Broke)
	}
	// It stops at the first step that breaks, and only there.
	if last.Broke == "" {
		fail("no step broke")
	}
	for _, s := range steps[:len(steps)-1] {
		if s.Broke != "" {
			fail("went on after a step broke")
		}
	}
	// 100, 200, 400 fit (the bucket holds a second of 400); 800 for 1.5 s is over. That arithmetic holds when
	// the queries left on schedule; a starved generator sends its backlog in bursts, which the bucket meets
	// with fewer tokens (so 400 may break) or over a longer span (so 800 may not). 100 and 200 cannot break:
	// their whole step (150, 300 queries) fits in the bucket's 400.
	onTime := true
	for _, s := range steps {
		onTime = onTime && s.SchedLate.ValueAtQuantile(99) < 50_000
	}
	if last.Rate < 400 || (onTime && last.Rate != 800) {
		fail(fmt.Sprintf("wrong step broke (sends on schedule: %v)", onTime))
	}
}
