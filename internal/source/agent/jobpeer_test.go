package agent

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunJobPeer: member a of a 3-member job; b's name resolves after 150 ms and c's after 300 ms. Polling
// every 20 ms, a resolves both right after; its back-off client (50 ms, x2) misses c's name at 0, 50 and
// 150 ms and connects at the attempt of 350 ms — after the name resolved, the back-off's share.
func TestRunJobPeer(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	start := time.Now()
	publish := map[string]time.Duration{"b.job.ns.svc.": 150 * time.Millisecond, "c.job.ns.svc.": 300 * time.Millisecond}
	var mu sync.Mutex
	asked := map[string]int{}
	lookup := func(ctx context.Context, name string) ([]string, error) {
		mu.Lock()
		asked[name]++
		mu.Unlock()
		if d, ok := publish[name]; ok && time.Since(start) >= d {
			return []string{"127.0.0.1"}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		if _, err := lookup(ctx, host); err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Addr().String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := JobPeerConfig{Names: []string{"a.job.ns.svc.", "b.job.ns.svc.", "c.job.ns.svc."}, Host: "a", Port: 1,
		Interval: 20 * time.Millisecond, Timeout: time.Second, Connect: true, BackoffBase: 50 * time.Millisecond, BackoffFactor: 2, BackoffCap: time.Second}
	// A peer connects to a's listener.
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
	}()
	p := RunJobPeer(ctx, cfg, ln, lookup, dial)
	if asked["a.job.ns.svc."] != 0 || len(p.Names) != 2 || len(p.Connects) != 2 {
		t.Fatalf("own name asked %d times; names %+v connects %+v", asked["a.job.ns.svc."], p.Names, p.Connects)
	}
	res, conn := p.Resolved.Sub(start), p.Connected.Sub(start)
	if res < 300*time.Millisecond || res > 600*time.Millisecond {
		t.Errorf("resolved %s after start, want just after 300 ms", res)
	}
	if conn < 350*time.Millisecond || conn < res {
		t.Errorf("connected %s after start (resolved %s), want the back-off's 350 ms attempt or later", conn, res)
	}
	c := p.Connects[1]
	if !strings.HasPrefix(c.Name, "c.") || c.Attempts < 4 || c.NXDomain < 3 || c.LastError != "" {
		t.Errorf("connect to c %+v: want >= 4 attempts, >= 3 NXDOMAIN", c)
	}
	if p.Names[1].NXDomain == 0 || p.Names[1].Resolved.IsZero() {
		t.Errorf("poll of c %+v", p.Names[1])
	}
	// The listener keeps accepting after the report until ctx ends; the one connection made is counted once
	// it was accepted (it was dialled before RunJobPeer returned, but may be accepted after).
	if p.Accepted > 1 {
		t.Errorf("accepted %d", p.Accepted)
	}
}

// TestLastOf: the latest time, or zero when any is missing.
func TestLastOf(t *testing.T) {
	t0 := time.Unix(100, 0)
	ts := []time.Time{t0, t0.Add(time.Second), t0.Add(-time.Second)}
	if got := lastOf(3, func(i int) time.Time { return ts[i] }); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("last %v", got)
	}
	ts[2] = time.Time{}
	if got := lastOf(3, func(i int) time.Time { return ts[i] }); !got.IsZero() {
		t.Errorf("with a zero: %v", got)
	}
}
