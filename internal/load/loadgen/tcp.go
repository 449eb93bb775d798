package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The TCP tests speak a one-byte protocol to `kubeslow agent serve --tcp-listen`: the client's first byte
// chooses the test.
const (
	// TCPStream: the client sends bytes until it closes its side; the server counts them and answers the
	// count (8 bytes, big endian), so throughput is what was delivered, not what was buffered.
	TCPStream byte = 'S'
	// TCPRR: request/response of one byte each, as netperf's TCP_RR.
	TCPRR byte = 'R'
)

// TCPResult is one TCP test's outcome.
type TCPResult struct {
	// Bytes delivered to the server (stream) and the rate.
	Bytes        int64
	BitsPerSec   float64
	Elapsed      time.Duration
	Transactions int64
	// Latency of each round trip in µs (request/response).
	Latency *hdrhistogram.Histogram
}

// MaxTCPWrite bounds the stream test's write size.
const MaxTCPWrite = 4 << 20

// ValidateTCP checks the TCP tests' bounds: each test's duration and the stream's write size.
func ValidateTCP(d time.Duration, size int) error {
	if d <= 0 || d > MaxDuration {
		return fmt.Errorf("duration %s: want (0, %s]", d, MaxDuration)
	}
	if size < 1 || size > MaxTCPWrite {
		return fmt.Errorf("write size %d: want 1..%d bytes", size, MaxTCPWrite)
	}
	return nil
}

// TCPStreamRun sends for d over one connection with writes of size bytes.
func TCPStreamRun(ctx context.Context, dial func(context.Context) (net.Conn, error), d time.Duration, size int) (*TCPResult, error) {
	if err := ValidateTCP(d, size); err != nil {
		return nil, err
	}
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Write([]byte{TCPStream}); err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	start := time.Now()
	end := start.Add(d)
	_ = c.SetWriteDeadline(end.Add(5 * time.Second))
	for time.Now().Before(end) && ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			return nil, fmt.Errorf("stream write: %w", err)
		}
	}
	tc, ok := c.(interface{ CloseWrite() error })
	if !ok {
		return nil, errors.New("connection cannot half-close")
	}
	if err := tc.CloseWrite(); err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var n [8]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, fmt.Errorf("reading the delivered count: %w", err)
	}
	el := time.Since(start)
	got := int64(binary.BigEndian.Uint64(n[:]))
	return &TCPResult{Bytes: got, BitsPerSec: float64(got) * 8 / el.Seconds(), Elapsed: el}, nil
}

// TCPRRRun does one-byte request/response transactions for d over one connection.
func TCPRRRun(ctx context.Context, dial func(context.Context) (net.Conn, error), d time.Duration) (*TCPResult, error) {
	if err := ValidateTCP(d, 1); err != nil {
		return nil, err
	}
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if _, err := c.Write([]byte{TCPRR}); err != nil {
		return nil, err
	}
	res := &TCPResult{Latency: newHist()}
	b := []byte{'x'}
	start := time.Now()
	end := start.Add(d)
	_ = c.SetDeadline(end.Add(5 * time.Second))
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(end) {
			break
		}
		if _, err := c.Write(b); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return nil, err
		}
		_ = res.Latency.RecordValue(max(1, min(time.Since(t0).Microseconds(), histMax)))
		res.Transactions++
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
