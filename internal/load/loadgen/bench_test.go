package loadgen

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/agent"
)

// BenchmarkParseHead parses the heads of the two servers of TestCompareWrk's 404 answers: kubeslow's own and
// nginx's (longer: Server, Date, Content-Type and Connection lines).
func BenchmarkParseHead(b *testing.B) {
	for _, c := range []struct{ name, head string }{
		{"kubeslow", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"},
		{"nginx", "HTTP/1.1 404 Not Found\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 05:00:00 GMT\r\n" +
			"Content-Type: text/html\r\nContent-Length: 153\r\nConnection: keep-alive\r\n\r\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := []byte(c.head)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				if _, ok, err := parseHead(buf); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkEpollClosedLoop is the epoll engine's request path (one loop thread, 8 connections, the 3 KB POST)
// against the agent's epoll server in this process, with keep-alive and with a new connection per request:
// ns/op is the wall time per request with the server sharing the machine.
func BenchmarkEpollClosedLoop(b *testing.B) {
	if !epollAvailable {
		b.Skip("no epoll engine on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.ServeEpoll(ctx, ln.(*net.TCPListener)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	for _, newConn := range []bool{false, true} {
		name := "keep-alive"
		if newConn {
			name = "new-conn"
		}
		b.Run(name, func(b *testing.B) {
			res, err := Run(context.Background(), Config{Addr: ln.Addr().String(), Method: "POST", BodyBytes: 3072, Mode: Closed,
				Concurrency: 8, Threads: 1, Duration: time.Minute, MaxRequests: int64(b.N), NewConn: newConn, Engine: EngineEpoll})
			if err != nil {
				b.Fatal(err)
			}
			if res.Requests != int64(b.N) || res.Errors != 0 {
				b.Fatalf("%d requests, errors %v", res.Requests, res.ErrorKinds)
			}
			b.ReportMetric(float64(res.Requests)/res.Elapsed.Seconds(), "req/s")
		})
	}
}
