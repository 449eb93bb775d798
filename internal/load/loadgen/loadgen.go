// Package loadgen is kubeslow's HTTP load generator: closed loop (as fast as c connections allow) and open
// loop (a fixed rate, latency measured from each request's intended send time, so a server stall shows in the
// tail instead of being hidden by the generator waiting — no coordinated omission), keep-alive or a new
// connection per request, latencies in HdrHistograms.
//
// It speaks HTTP/1.1 on raw connections with the request pre-encoded and responses parsed in place
// (Content-Length bodies), so that the generator is not the bottleneck.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Mode is the loop discipline.
type Mode string

const (
	// Closed: each connection sends its next request when the previous answer arrives.
	Closed Mode = "closed"
	// Open: requests are due at a fixed rate whatever the answers do.
	Open Mode = "open"
)

// Limits bounding every run.
const (
	MaxDuration    = 10 * time.Minute
	MaxConcurrency = 4096
	MaxRate        = 1e6
	histMax        = int64(60 * time.Second / time.Microsecond)
)

// Config is one load run.
type Config struct {
	// Addr is the host:port to connect to; Host and Path go into the request line and Host header.
	Addr, Host, Path string
	Method           string
	// BodyBytes of payload (default in the CLI: 3 KB, as in case D).
	BodyBytes   int
	Mode        Mode
	Concurrency int
	// Rate is the open loop's requests per second.
	Rate     float64
	Duration time.Duration
	// MaxRequests stops the run after this many requests (0: only Duration).
	MaxRequests int64
	// NewConn opens a connection per request (kube-proxy rules and overlays cost mostly per connection).
	NewConn bool
	// Timeout per request (default 5 s). The epoll engine fails a request once it has waited Timeout (swept
	// every Timeout/20, at most 250 ms); the goroutine engine after between Timeout/2 and Timeout (the
	// connection's deadline is refreshed only when half of it is used up).
	Timeout time.Duration
	// Dial overrides the dialer (tests; namespaces); it implies the goroutine engine.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Engine: EngineEpoll (one epoll loop per thread, as wrk; the default on Linux) or EngineGo (a
	// goroutine per connection on Go's netpoller; the default elsewhere and with Dial).
	Engine string
	// Threads is the epoll engine's number of event-loop threads (0: the usable cores — half of them when the
	// server is on this host and connections are kept alive — at most one per connection; wrk's -t).
	Threads int
}

// Engines.
const (
	EngineAuto  = ""
	EngineEpoll = "epoll"
	EngineGo    = "go"
)

// engine is the engine the run uses.
func (c *Config) engine() string {
	if c.Engine == EngineAuto {
		if c.Dial == nil && epollAvailable {
			return EngineEpoll
		}
		return EngineGo
	}
	return c.Engine
}

// Validate checks the bounds.
func (c *Config) Validate() error {
	switch {
	case c.Addr == "":
		return errors.New("no address")
	case c.Mode != Closed && c.Mode != Open:
		return fmt.Errorf("mode %q: want closed or open", c.Mode)
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency %d: want 1..%d", c.Concurrency, MaxConcurrency)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("duration %s: want (0, %s]", c.Duration, MaxDuration)
	case c.Mode == Open && (c.Rate <= 0 || c.Rate > MaxRate):
		return fmt.Errorf("rate %v: want (0, %v] requests/s", c.Rate, MaxRate)
	case c.BodyBytes < 0 || c.BodyBytes > 1<<20:
		return fmt.Errorf("body %d bytes: want 0..1 MiB", c.BodyBytes)
	case c.MaxRequests < 0:
		return fmt.Errorf("max requests %d: want >= 0", c.MaxRequests)
	case c.Engine != EngineAuto && c.Engine != EngineEpoll && c.Engine != EngineGo:
		return fmt.Errorf("engine %q: want %s or %s", c.Engine, EngineEpoll, EngineGo)
	case c.Engine == EngineEpoll && (!epollAvailable || c.Dial != nil):
		return errors.New("the epoll engine needs Linux and no custom dialer")
	case c.Threads < 0 || c.Threads > c.Concurrency:
		return fmt.Errorf("threads %d: want 0 (the usable cores) to the concurrency (%d)", c.Threads, c.Concurrency)
	case c.Threads > 0 && c.engine() != EngineEpoll:
		return errors.New("threads: only the epoll engine has a thread count (the goroutine engine uses Go's scheduler)")
	}
	return nil
}

// defaultThreads is the closed loop's number of event-loop threads: one per usable core, at most one per
// connection — but only half of the cores when the server is on this host (a loopback or local address), which
// needs the other half: on 2 cores against a local server (kubeslow's own or nginx, pinned to one core), one
// loop thread measured 1.1–3x the requests/s of two with keep-alive (TestCompareWrk). Not with a new connection
// per request: the generator's share of the work is then the larger (~38 µs of CPU per request against the
// server's ~22–25 µs, connect carrying the server's half of the handshake through loopback), and two loops
// measured 1.2x the requests/s of one against either server on the same 2 cores.
func defaultThreads(cores, conns int, local, newConn bool) int {
	if local && !newConn {
		cores = max(1, cores/2)
	}
	return max(1, min(cores, conns))
}

// localIP is whether ip is a loopback address or one of this network namespace's interfaces'.
func localIP(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Result is what a run measured.
type Result struct {
	Mode        Mode
	Concurrency int
	NewConn     bool
	Engine      string
	// Requests completed with a response; Errors did not (by kind: connect, write, read, timeout, protocol).
	Requests   int64
	Errors     int64
	ErrorKinds map[string]int64
	Codes      map[int]int64
	Elapsed    time.Duration
	// Latency of completed requests in microseconds: from the intended send time in the open loop, from the
	// actual send in the closed loop.
	Latency *hdrhistogram.Histogram
	// SchedLate is, in the open loop, how late the scheduler released each request after its intended time
	// (µs): its timing precision. SendLate is how late the request actually left (µs): the scheduler plus
	// waiting for a free connection.
	SchedLate, SendLate *hdrhistogram.Histogram
	// Planned requests of the open loop; Unsent were due but never left before the end.
	Planned, Unsent int64
	// Connections opened.
	Connections int64
	// Threads is the epoll engine's number of event-loop threads (0 for the goroutine engine).
	Threads int
}

// RequestsPerSecond is the achieved throughput.
func (r *Result) RequestsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, 3) }

// request pre-encodes the HTTP/1.1 request.
func (c *Config) request() []byte {
	var b bytes.Buffer
	method, path, host := c.Method, c.Path, c.Host
	if method == "" {
		method = "POST"
	}
	if path == "" {
		path = "/"
	}
	if host == "" {
		host = c.Addr
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	if c.NewConn {
		b.WriteString("Connection: close\r\n")
	}
	if c.BodyBytes > 0 || method == "POST" || method == "PUT" {
		fmt.Fprintf(&b, "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n", c.BodyBytes)
	}
	b.WriteString("\r\n")
	b.Write(bytes.Repeat([]byte{'x'}, c.BodyBytes))
	return b.Bytes()
}

type worker struct {
	cfg     *Config
	req     []byte
	conn    net.Conn
	br      *bufio.Reader
	lat     *hdrhistogram.Histogram
	late    *hdrhistogram.Histogram
	codes   map[int]int64
	errs    map[string]int64
	n, nerr int64
	conns   int64
	// deadline is the connection's current I/O deadline, refreshed only when less than half the
	// time-out is left (setting it for every request costs a runtime timer update each time).
	deadline time.Time
}

var errProtocol = errors.New("protocol")

func (w *worker) dial(ctx context.Context) error {
	var err error
	if w.cfg.Dial != nil {
		w.conn, err = w.cfg.Dial(ctx, "tcp", w.cfg.Addr)
	} else {
		d := net.Dialer{Timeout: w.cfg.Timeout}
		w.conn, err = d.DialContext(ctx, "tcp", w.cfg.Addr)
	}
	if err != nil {
		return err
	}
	w.conns++
	w.deadline = time.Time{}
	if w.br == nil {
		w.br = bufio.NewReaderSize(w.conn, 16<<10)
	} else {
		w.br.Reset(w.conn)
	}
	return nil
}

func (w *worker) close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// do sends one request and reads its response; it returns the status code or the error kind.
func (w *worker) do(ctx context.Context) (int, string) {
	if w.conn == nil {
		if err := w.dial(ctx); err != nil {
			return 0, kind(err, "connect")
		}
	}
	if now := time.Now(); w.deadline.Sub(now) < w.cfg.Timeout/2 {
		w.deadline = now.Add(w.cfg.Timeout)
		_ = w.conn.SetDeadline(w.deadline)
	}
	if _, err := w.conn.Write(w.req); err != nil {
		w.close()
		return 0, kind(err, "write")
	}
	code, keep, err := readResponse(w.br)
	if err != nil {
		w.close()
		return 0, kind(err, "read")
	}
	if !keep || w.cfg.NewConn {
		w.close()
	}
	return code, ""
}

func kind(err error, def string) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, errProtocol):
		return "protocol"
	}
	return def
}

// readResponse parses an HTTP/1.1 response with a Content-Length (or no) body and discards the body. It
// reports whether the connection may be reused.
func readResponse(br *bufio.Reader) (code int, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 404 Not Found\r\n"
	if code, keep, err = statusLine(line); err != nil {
		return 0, false, err
	}
	length := int64(-1)
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		if len(h) <= 2 {
			break
		}
		if err := headerField(h, &length, &keep); err != nil {
			return 0, false, err
		}
	}
	switch {
	case length > 0:
		if _, err := br.Discard(int(length)); err != nil {
			return 0, false, err
		}
	case (&head{code: code, length: length}).toClose():
		// No length: the body runs to the end of the connection.
		if _, err := io.Copy(io.Discard, br); err != nil {
			return 0, false, err
		}
		keep = false
	}
	return code, keep, nil
}

// statusLine parses "HTTP/1.x NNN ...": the code, and whether HTTP/1.1 keep-alive applies.
func statusLine(line []byte) (code int, keep bool, err error) {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("%w: status line %q", errProtocol, truncate(line))
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return 0, false, fmt.Errorf("%w: status %q", errProtocol, truncate(line))
		}
		code = code*10 + int(d-'0')
	}
	if code < 100 {
		return 0, false, fmt.Errorf("%w: status %q", errProtocol, truncate(line))
	}
	return code, line[7] == '1', nil
}

// headerField applies one response header line (with or without its CRLF) to the body length and the
// keep-alive decision.
func headerField(h []byte, length *int64, keep *bool) error {
	k, v, ok := bytes.Cut(h, []byte(":"))
	if !ok {
		return fmt.Errorf("%w: header %q", errProtocol, truncate(h))
	}
	// Only three names matter, told apart by their length first: the other lines (nginx's Server, Date and
	// Content-Type) cost the search for their colon.
	if n := len(k); n != len("Content-Length") && n != len("Connection") && n != len("Transfer-Encoding") {
		return nil
	}
	v = bytes.TrimSpace(v)
	switch {
	case bytes.EqualFold(k, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: content-length %q", errProtocol, v)
		}
		*length = n
	case bytes.EqualFold(k, []byte("Connection")):
		if bytes.EqualFold(v, []byte("close")) {
			*keep = false
		}
	case bytes.EqualFold(k, []byte("Transfer-Encoding")):
		return fmt.Errorf("%w: transfer-encoding %q not supported", errProtocol, v)
	}
	return nil
}

func truncate(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}

func (w *worker) record(code int, errKind string, lat time.Duration) {
	if errKind != "" {
		w.nerr++
		w.errs[errKind]++
		return
	}
	w.n++
	w.codes[code]++
	us := lat.Microseconds()
	if us < 1 {
		us = 1
	}
	_ = w.lat.RecordValue(min(us, histMax))
}

// Run performs the load run. It stops at the duration, the request limit or ctx's end, whichever is first.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	req := cfg.request()
	res := &Result{Mode: cfg.Mode, Concurrency: cfg.Concurrency, NewConn: cfg.NewConn, Engine: cfg.engine(), Latency: newHist(),
		SchedLate: newHist(), SendLate: newHist(), Codes: map[int]int64{}, ErrorKinds: map[string]int64{}}
	if res.Engine == EngineEpoll {
		if err := runEpoll(ctx, &cfg, req, res); err != nil {
			return nil, err
		}
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+cfg.Timeout)
	defer cancel()
	workers := make([]*worker, cfg.Concurrency)
	for i := range workers {
		workers[i] = &worker{cfg: &cfg, req: req, lat: newHist(), late: newHist(), codes: map[int]int64{}, errs: map[string]int64{}}
	}
	start := time.Now()
	end := start.Add(cfg.Duration)
	var issued atomic.Int64
	var wg sync.WaitGroup
	if cfg.Mode == Closed {
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer w.close()
				for ctx.Err() == nil && time.Now().Before(end) {
					if cfg.MaxRequests > 0 && issued.Add(1) > cfg.MaxRequests {
						return
					}
					t0 := time.Now()
					code, ek := w.do(ctx)
					w.record(code, ek, time.Since(t0))
				}
			}()
		}
		wg.Wait()
	} else {
		due := make(chan time.Time, 1<<16)
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer w.close()
				for intended := range due {
					if ctx.Err() != nil {
						continue // drain
					}
					_ = w.late.RecordValue(max(1, min(time.Since(intended).Microseconds(), histMax)))
					code, ek := w.do(ctx)
					// From the intended time: waiting for a free connection counts.
					w.record(code, ek, time.Since(intended))
				}
			}()
		}
		res.Planned, res.Unsent = dispatch(ctx, cfg, start, end, due, res.SchedLate)
		close(due)
		wg.Wait()
	}
	res.Elapsed = time.Since(start)
	for _, w := range workers {
		w.addTo(res)
	}
	return res, nil
}

// addTo merges a worker's counts and histograms into the result.
func (w *worker) addTo(res *Result) {
	res.Requests += w.n
	res.Errors += w.nerr
	res.Connections += w.conns
	res.Latency.Merge(w.lat)
	if res.Mode == Open {
		res.SendLate.Merge(w.late)
	}
	for k, v := range w.codes {
		res.Codes[k] += v
	}
	for k, v := range w.errs {
		res.ErrorKinds[k] += v
	}
}

// spinWindow is how long before a due time the dispatcher stops sleeping and spins: Go's timers overshoot
// by up to ~1 ms on these machines, spinning (yielding to other goroutines) holds sends to microseconds.
const spinWindow = 1500 * time.Microsecond

// dispatch releases intended send times at cfg.Rate until end, recording how late each left.
func dispatch(ctx context.Context, cfg Config, start, end time.Time, due chan<- time.Time, late *hdrhistogram.Histogram) (planned, unsent int64) {
	interval := float64(time.Second) / cfg.Rate
	for i := int64(0); ; i++ {
		if cfg.MaxRequests > 0 && i >= cfg.MaxRequests {
			return planned, unsent
		}
		intended := start.Add(time.Duration(float64(i) * interval))
		if !intended.Before(end) || ctx.Err() != nil {
			return planned, unsent
		}
		planned++
		if d := time.Until(intended); d > spinWindow {
			select {
			case <-time.After(d - spinWindow):
			case <-ctx.Done():
				return planned, unsent + 1
			}
		}
		for time.Now().Before(intended) {
			runtime.Gosched()
		}
		select {
		case due <- intended:
			_ = late.RecordValue(max(1, min(time.Since(intended).Microseconds(), histMax)))
		case <-ctx.Done():
			return planned, unsent + 1
		}
	}
}
