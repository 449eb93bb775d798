package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func serveEpoll(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeEpoll(ctx, ln.(*net.TCPListener)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		ln.Close()
	})
	return ln.Addr().String()
}

// TestServeEpollHTTP: Go's HTTP client (keep-alive, bodies of every size, Connection: close) gets the 404 the
// net/http server gives, on one connection while it is kept alive.
func TestServeEpollHTTP(t *testing.T) {
	addr := serveEpoll(t)
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for _, size := range []int{0, 1, 3072, 15 << 10, 16 << 10, 1 << 20} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/x", strings.NewReader(strings.Repeat("b", size)))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("body %d: %v", size, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || len(b) != 0 || resp.Close {
			t.Fatalf("body %d: %d %q close=%v", size, resp.StatusCode, b, resp.Close)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Close = true
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !resp.Close {
		t.Fatalf("Connection: close: %d close=%v", resp.StatusCode, resp.Close)
	}
}

// TestServeEpollWire: pipelined requests are answered in order on one connection; HTTP/1.0 closes; a chunked
// body gets 501, a malformed request 400 and an oversized head 431, each closing the connection.
func TestServeEpollWire(t *testing.T) {
	addr := serveEpoll(t)
	exchange := func(in string) (codes []int, closed bool) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, in); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				// The server closed: EOF after the last answer. A time-out would mean it kept it open.
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					return codes, false
				}
				return codes, true
			}
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
			if len(codes) == strings.Count(in, "HTTP/1.") && !resp.Close {
				return codes, false
			}
		}
	}
	body := strings.Repeat("p", 3000)
	pipelined := strings.Repeat(fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body), 5)
	for _, c := range []struct {
		name, in  string
		codes     []int
		wantClose bool
	}{
		{"pipelined", pipelined, []int{404, 404, 404, 404, 404}, false},
		{"http/1.0", "GET / HTTP/1.0\r\n\r\n", []int{404}, true},
		{"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", []int{404}, false},
		{"chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", []int{501}, true},
		{"garbage", "HELLO\r\n\r\n", []int{400}, true},
		{"bad length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", []int{400}, true},
		{"huge head", "GET / HTTP/1.1\r\nX: " + strings.Repeat("h", 9000) + "\r\n\r\n", []int{431}, true},
	} {
		codes, closed := exchange(c.in)
		if fmt.Sprint(codes) != fmt.Sprint(c.codes) || closed != c.wantClose {
			t.Errorf("%s: codes %v closed %v, want %v closed %v", c.name, codes, closed, c.codes, c.wantClose)
		}
	}
}

func FuzzParseRequestHead(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3072\r\n"))
	f.Add([]byte("GET / HTTP/1.0\r\nConnection: keep-alive\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"))
	f.Fuzz(func(t *testing.T, h []byte) {
		length, _, refuse := parseRequestHead(h)
		if refuse == nil && length < 0 {
			t.Fatalf("accepted a negative length %d", length)
		}
	})
}
