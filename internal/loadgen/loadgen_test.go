package loadgen

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/agent"
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
	for _, newConn := range []bool{false, true} {
		bodies.Store(0)
		res, err := Run(context.Background(), Config{Addr: addr, Method: "POST", BodyBytes: 3072, Mode: Closed, Concurrency: 4,
			Duration: time.Minute, MaxRequests: 400, NewConn: newConn})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 400 || res.Errors != 0 || res.Codes[404] != 400 || bodies.Load() != 400 || res.Latency.TotalCount() != 400 {
			t.Fatalf("newConn=%v: %+v codes %v errors %v bodies %d", newConn, res, res.Codes, res.ErrorKinds, bodies.Load())
		}
		if want := int64(4); newConn {
			if res.Connections != 400 {
				t.Errorf("new-conn: %d connections for 400 requests", res.Connections)
			}
		} else if res.Connections != want {
			t.Errorf("keep-alive: %d connections, want %d", res.Connections, want)
		}
	}
}

// TestOpenLoopCount: the open loop plans rate x duration requests and sends them all.
func TestOpenLoopCount(t *testing.T) {
	addr := serve(t, agent.Handler())
	res, err := Run(context.Background(), Config{Addr: addr, Mode: Open, Rate: 500, Concurrency: 4, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Planned != 500 || res.Requests+res.Errors+res.Unsent != 500 || res.Requests < 490 || res.SchedLate.TotalCount() != res.Requests+res.Errors {
		t.Fatalf("planned %d requests %d errors %d unsent %d", res.Planned, res.Requests, res.Errors, res.Unsent)
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
	closed := run(Config{Mode: Closed, Concurrency: 1})
	open := run(Config{Mode: Open, Concurrency: 1, Rate: 1000})
	t.Logf("p99: closed loop %s, open loop %s", closed, open)
	if open < stall/2 {
		t.Errorf("open loop p99 %s does not show the %s stall", open, stall)
	}
	if closed >= stall/4 {
		t.Errorf("closed loop p99 %s: expected the stall to be hidden (one slow request per stall)", closed)
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
	} {
		c := ok
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
