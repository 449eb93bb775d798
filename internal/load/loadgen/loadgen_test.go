package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/agent"
)

func TestReadResponse(t *testing.T) {
	for _, c := range []struct {
		name, in string
		code     int
		keep     bool
		err      string
		rest     string
	}{
		{"404 no body", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\nNEXT", 404, true, "", "NEXT"},
		{"body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT", 200, true, "", "NEXT"},
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, false, "", ""},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, false, "", ""},
		{"to end", "HTTP/1.1 200 OK\r\n\r\nall of it", 200, false, "", ""},
		{"204", "HTTP/1.1 204 No Content\r\n\r\nNEXT", 204, true, "", "NEXT"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 0, false, "transfer-encoding", ""},
		{"garbage", "SSH-2.0-OpenSSH\r\n", 0, false, "status line", ""},
		{"bad code", "HTTP/1.1 2x0 OK\r\n\r\n", 0, false, "status", ""},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", 0, false, "content-length", ""},
		{"bad header", "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", 0, false, "header", ""},
		{"truncated", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, false, "EOF", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(c.in))
			code, keep, err := readResponse(br)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || code != c.code || keep != c.keep {
				t.Fatalf("got %d %v %v, want %d %v", code, keep, err, c.code, c.keep)
			}
			rest, _ := br.ReadString(0)
			if rest != c.rest {
				t.Fatalf("left %q, want %q", rest, c.rest)
			}
		})
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\nbody"))
	f.Fuzz(func(t *testing.T, data []byte) {
		code, _, err := readResponse(bufio.NewReader(strings.NewReader(string(data))))
		if err == nil && (code < 0 || code > 999) {
			t.Fatalf("accepted code %d", code)
		}
	})
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestClosedLoop: every request is answered by the agent's 404 and counted once; a request limit is exact;
// new-connection mode opens one connection per request.
func TestClosedLoop(t *testing.T) {
	var bodies atomic.Int64
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 3072 {
			bodies.Add(1)
		}
		agent.Handler().ServeHTTP(w, r)
	}))
	for _, engine := range engines(t) {
		for _, newConn := range []bool{false, true} {
			bodies.Store(0)
			res, err := Run(context.Background(), Config{Addr: addr, Method: "POST", BodyBytes: 3072, Mode: Closed, Concurrency: 4,
				Duration: time.Minute, MaxRequests: 400, NewConn: newConn, Engine: engine})
			if err != nil {
				t.Fatal(err)
			}
			if res.Engine != engine || res.Requests != 400 || res.Errors != 0 || res.Codes[404] != 400 || bodies.Load() != 400 || res.Latency.TotalCount() != 400 {
				t.Fatalf("%s newConn=%v: %+v codes %v errors %v bodies %d", engine, newConn, res, res.Codes, res.ErrorKinds, bodies.Load())
			}
			if want := int64(4); newConn {
				if res.Connections != 400 {
					t.Errorf("%s new-conn: %d connections for 400 requests", engine, res.Connections)
				}
			} else if res.Connections < 1 || res.Connections > want {
				// At most one connection per worker, reused; a worker may find the shared count of 400
				// used up before it connects on a loaded machine (seen: 3 connections of 4).
				t.Errorf("%s keep-alive: %d connections, want 1 to %d", engine, res.Connections, want)
			}
		}
	}
	if epollAvailable {
		// 3 threads for 4 connections: one thread has two. Bounded by time, not by a request count: the threads
		// start one after another, and a shared count of a few hundred requests can be used up by the first
		// thread before the others have connected (seen in CI: 300 requests in 6.7 ms on one connection). 2 s: at
		// nice 19 beside two spinning processes, 300 ms once ended before any request was answered.
		res, err := Run(context.Background(), Config{Addr: addr, Mode: Closed, Concurrency: 4, Threads: 3, Duration: 2 * time.Second})
		if err != nil || res.Requests == 0 || res.Errors != 0 || res.Connections != 4 || res.Threads != 3 {
			t.Fatalf("3 threads: %v %+v", err, res)
		}
	}
}

func TestDefaultThreads(t *testing.T) {
	for _, c := range []struct {
		cores, conns   int
		local, newConn bool
		want           int
	}{{2, 8, false, false, 2}, {2, 8, true, false, 1}, {1, 8, true, false, 1}, {8, 4, false, false, 4}, {8, 32, true, false, 4},
		{16, 2, true, false, 2}, {2, 8, true, true, 2}, {8, 4, true, true, 4}, {1, 8, true, true, 1}} {
		if got := defaultThreads(c.cores, c.conns, c.local, c.newConn); got != c.want {
			t.Errorf("%d cores, %d connections, local %v, new conn %v: %d threads, want %d", c.cores, c.conns, c.local, c.newConn, got, c.want)
		}
	}
	if !localIP(net.ParseIP("127.0.0.1")) || !localIP(net.ParseIP("::1")) || localIP(net.ParseIP("198.18.0.1")) {
		t.Error("localIP")
	}
}

// engines are the engines this system can run.
func engines(t *testing.T) []string {
	if epollAvailable {
		return []string{EngineEpoll, EngineGo}
	}
	t.Log("no epoll engine on this system")
	return []string{EngineGo}
}

// TestOpenLoopCount: the open loop plans rate x duration requests and sends them all.
func TestOpenLoopCount(t *testing.T) {
	addr := serve(t, agent.Handler())
	for _, engine := range engines(t) {
		res, err := Run(context.Background(), Config{Addr: addr, Mode: Open, Rate: 500, Concurrency: 4, Duration: time.Second, Engine: engine})
		if err != nil {
			t.Fatal(err)
		}
		// Every planned request is counted once, and all leave when the sends keep their schedule. A starved
		// generator (the unit tests run at nice 19 beside the lab's build) sends late, its 4 connections stay
		// busy, and what is still due at the end is Unsent (seen at nice 19 beside four spinning processes:
		// 20-202 of 500): counted, not lost. Sends' lateness is recorded for each request sent, and by the epoll
		// engine for each released into its backlog (the Unsent among them too).
		onTime := res.SchedLate.ValueAtQuantile(99) < 20_000
		if res.Planned != 500 || res.Requests+res.Errors+res.Unsent != 500 || res.Requests == 0 || (onTime && res.Requests < 490) ||
			res.SchedLate.TotalCount() < res.Requests+res.Errors || res.SchedLate.TotalCount() > res.Planned {
			t.Fatalf("%s: planned %d requests %d errors %d unsent %d, sends late p99 %d µs", engine, res.Planned, res.Requests, res.Errors, res.Unsent, res.SchedLate.ValueAtQuantile(99))
		}
		t.Logf("%s: sends late by p99 %d µs, max %d µs", engine, res.SchedLate.ValueAtQuantile(99), res.SchedLate.Max())
	}
}

// TestOpenLoopSeesStalls is the coordinated-omission test: a server that stalls 200 ms of every second.
// A closed loop at one connection sends nothing while it waits, so only one request per stall is slow and
// its p99 stays low: the stall is hidden. The open loop keeps the schedule, every request due during the
// stall waits for it, and its p99 shows the stall.
func TestOpenLoopSeesStalls(t *testing.T) {
	const period, stall = time.Second, 200 * time.Millisecond
	epoch := time.Now()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if in := time.Since(epoch) % period; in < stall {
			time.Sleep(stall - in) // the server's fault: it answers nothing until the stall ends
		}
		agent.Handler().ServeHTTP(w, r)
	}))
	run := func(c Config) time.Duration {
		c.Addr, c.Duration = addr, 2*time.Second
		res, err := Run(context.Background(), c)
		if err != nil || res.Requests == 0 {
			t.Fatalf("%v: %v %+v", c.Mode, err, res)
		}
		return time.Duration(res.Latency.ValueAtQuantile(99)) * time.Microsecond
	}
	for _, engine := range engines(t) {
		closed := run(Config{Mode: Closed, Concurrency: 1, Engine: engine})
		open := run(Config{Mode: Open, Concurrency: 1, Rate: 1000, Engine: engine})
		t.Logf("%s: p99: closed loop %s, open loop %s", engine, closed, open)
		if open < stall/2 {
			t.Errorf("%s: open loop p99 %s does not show the %s stall", engine, open, stall)
		}
		// Hidden: the closed loop's p99 a fraction of what the open loop saw (one slow request per stall). Relative,
		// not against the stall: on a starved machine (the unit tests run at nice 19 beside the lab's build) the
		// scheduler's delays add to every request of both, and the open loop, which keeps its schedule, also
		// counts the backlog they leave (seen at nice 19 beside two spinning processes: closed 66 ms, open 5.2 s).
		if closed*4 > open {
			t.Errorf("%s: closed loop p99 %s against the open loop's %s: expected the stall to be hidden (one slow request per stall)", engine, closed, open)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Addr: "a:1", Mode: Closed, Concurrency: 1, Duration: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"no addr": func(c *Config) { c.Addr = "" }, "mode": func(c *Config) { c.Mode = "x" },
		"conc": func(c *Config) { c.Concurrency = 0 }, "dur": func(c *Config) { c.Duration = time.Hour },
		"rate": func(c *Config) { c.Mode, c.Rate = Open, 0 }, "body": func(c *Config) { c.BodyBytes = 2 << 20 },
		"engine":                    func(c *Config) { c.Engine = "io_uring" },
		"threads above connections": func(c *Config) { c.Threads = 2 },
		"threads negative":          func(c *Config) { c.Threads = -1 },
		"threads with goroutines":   func(c *Config) { c.Engine, c.Threads = EngineGo, 1 },
		"epoll with a dialer": func(c *Config) {
			c.Engine, c.Dial = EngineEpoll, func(context.Context, string, string) (net.Conn, error) { return nil, nil }
		},
	} {
		c := ok
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// rawServer answers every connection with handle (which reads the request itself); it stops with the test.
func rawServer(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				go func() { <-done; c.Close() }()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// readRequest reads one request (head and Content-Length body) from br.
func readRequest(br *bufio.Reader) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

// TestResponsesAndErrors: bodies larger than the read buffer and bodies to the end of the connection are read
// whole; a refused connection, a server that never answers and one that answers garbage are each counted as
// their kind of error, in both engines.
func TestResponsesAndErrors(t *testing.T) {
	big := rawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for readRequest(br) == nil {
			body := strings.Repeat("b", 100_000)
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
				return
			}
		}
	})
	toClose := rawServer(t, func(c net.Conn) {
		if readRequest(bufio.NewReader(c)) == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n"+strings.Repeat("z", 40_000))
		}
	})
	silent := rawServer(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	// Answers as soon as it has the head, then reads the body: with a 1 MiB body the generator is still
	// writing when the answer arrives.
	early := rawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
		}
	})
	garbage := rawServer(t, func(c net.Conn) {
		if readRequest(bufio.NewReader(c)) == nil {
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH\r\n\r\n")
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	for _, engine := range engines(t) {
		for _, c := range []struct {
			name, addr string
			want       func(*Result) bool
		}{
			// The cases that end on their 50 requests (the successes, and garbage's 50 protocol errors) get a
			// generous per-request timeout: the 200 ms one, which the silent server needs to be reached twice
			// in the run, is long enough on an idle machine only (a loaded CI machine timed out two 100 KB
			// bodies, and two of garbage's answers, which then counted as timeouts, not protocol errors).
			{"100 KB body", big, func(r *Result) bool {
				return r.Requests == 50 && r.Codes[200] == 50 && r.Errors == 0 && r.Connections == 2
			}},
			{"body to close", toClose, func(r *Result) bool {
				return r.Requests == 50 && r.Codes[200] == 50 && r.Errors == 0 && r.Connections == 50
			}},
			{"answer before the body", early, func(r *Result) bool {
				return r.Requests == 50 && r.Codes[200] == 50 && r.Errors == 0 && r.Connections == 2
			}},
			{"refused", refused, func(r *Result) bool { return r.Requests == 0 && r.Errors > 0 && r.ErrorKinds["connect"] == r.Errors }},
			{"silent", silent, func(r *Result) bool {
				return r.Requests == 0 && r.ErrorKinds["timeout"] >= 2 && r.ErrorKinds["timeout"] == r.Errors
			}},
			{"garbage", garbage, func(r *Result) bool { return r.Requests == 0 && r.Errors == 50 && r.ErrorKinds["protocol"] == r.Errors }},
		} {
			// The refused and silent cases run to their time: 500 ms time-outs (a refused connect answered
			// late on a starved machine is not a timeout), two of them at least within the run.
			d, timeout := 1500*time.Millisecond, 500*time.Millisecond
			if c.name != "refused" && c.name != "silent" {
				d, timeout = 20*time.Second, 5*time.Second
			}
			body := 100
			if c.name == "answer before the body" {
				body = 1 << 20 // more than the socket buffers take at once
			}
			res, err := Run(context.Background(), Config{Addr: c.addr, Mode: Closed, Concurrency: 2, Duration: d,
				MaxRequests: 50, Timeout: timeout, BodyBytes: body, Engine: engine})
			if err != nil {
				t.Fatalf("%s %s: %v", engine, c.name, err)
			}
			if !c.want(res) {
				t.Errorf("%s %s: requests %d codes %v errors %v connections %d", engine, c.name, res.Requests, res.Codes, res.ErrorKinds, res.Connections)
			}
			// A second's slack for a starved scheduler (seen at nice 19 beside four spinning processes: the
			// silent case 1.21 s of its 1.1 s then): a run that does not keep its bounds waits on the silent
			// server for good.
			if res.Elapsed > d+2*timeout+time.Second {
				t.Errorf("%s %s: ran %s, past its bounds", engine, c.name, res.Elapsed)
			}
		}
	}
}

// TestIPv6AndNames: the epoll engine resolves host names and speaks to IPv6 servers.
func TestIPv6AndNames(t *testing.T) {
	for _, c := range []struct{ listen, dial string }{{"[::1]:0", ""}, {"127.0.0.1:0", "localhost"}} {
		ln, err := net.Listen("tcp", c.listen)
		if err != nil {
			t.Logf("%s: %v (skipped)", c.listen, err)
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- agent.Serve(ctx, ln, agent.Handler()) }()
		addr := ln.Addr().String()
		if c.dial != "" {
			_, port, _ := net.SplitHostPort(addr)
			addr = net.JoinHostPort(c.dial, port)
		}
		for _, engine := range engines(t) {
			res, err := Run(context.Background(), Config{Addr: addr, Mode: Closed, Concurrency: 2, Duration: time.Minute, MaxRequests: 20, Engine: engine})
			if err != nil || res.Requests != 20 || res.Codes[404] != 20 {
				t.Errorf("%s %s: %v %+v", addr, engine, err, res)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// FuzzParseHead: the epoll engine's response-head parser never panics, and what it accepts is consistent with
// the buffered reader's parser.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nbody"))
	f.Add([]byte("HTTP/1.1 204 No Content\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok, err := parseHead(b)
		if !ok || err != nil {
			return
		}
		if h.size > len(b) || h.code < 100 || h.code > 999 || h.length < -1 {
			t.Fatalf("accepted %+v from %q", h, b)
		}
		code, _, err := readResponse(bufio.NewReader(strings.NewReader(string(b[:h.size]))))
		if err == nil && code != h.code {
			t.Fatalf("parsers disagree: %d vs %d on %q", code, h.code, b)
		}
	})
}
