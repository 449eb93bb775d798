package loadgen

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/agent"
)

// TestTCPTests: the stream test's count is what the server received; every RR transaction is timed.
func TestTCPTests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.ServeTCP(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ln.Addr().String())
	}
	s, err := TCPStreamRun(ctx, dial, 300*time.Millisecond, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	// At least one write per loop iteration was delivered and counted, in whole writes.
	if s.Bytes < 64<<10 || s.Bytes%(64<<10) != 0 || s.BitsPerSec <= 0 {
		t.Fatalf("stream: %+v", s)
	}
	rr, err := TCPRRRun(ctx, dial, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Transactions == 0 || rr.Latency.TotalCount() != rr.Transactions {
		t.Fatalf("rr: %d transactions, %d latencies", rr.Transactions, rr.Latency.TotalCount())
	}
	if _, err := TCPStreamRun(ctx, dial, time.Hour, 1); err == nil {
		t.Fatal("unbounded stream accepted")
	}
}

func TestValidateTCP(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		size int
		ok   bool
	}{
		{time.Second, 1, true},
		{MaxDuration, MaxTCPWrite, true},
		{0, 1024, false},
		{MaxDuration + time.Second, 1024, false},
		{time.Second, 0, false},
		{time.Second, MaxTCPWrite + 1, false},
	} {
		if err := ValidateTCP(c.d, c.size); (err == nil) != c.ok {
			t.Errorf("ValidateTCP(%s, %d) = %v, want ok=%v", c.d, c.size, err, c.ok)
		}
	}
}
