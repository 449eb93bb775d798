package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWriteBeforeConnected: the epoll engine writes a new connection's request right after connect, which
// through loopback finds the handshake complete. Through a network it finds the connection still opening:
// here a listener whose accept queue is full drops the first SYN, the write gets EAGAIN, and the request must
// go out when the retransmitted SYN (after the kernel's 1 s initial RTO) completes the connection.
func TestWriteBeforeConnected(t *testing.T) {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 0); err != nil { // an accept queue of one
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}).String()
	filler, err := net.Dial("tcp", addr) // fills the queue: the generator's first SYN is dropped
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	served := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond) // the generator has sent its SYN and written into the opening connection by now
		for i := 0; i < 2; i++ {           // the filler, then the generator's connection
			fd, _, err := unix.Accept(lfd)
			if err != nil {
				served <- err
				return
			}
			// The os.File owns fd: closed through it, not with unix.Close (its finalizer would close the
			// number again later, when another test may hold it).
			f := os.NewFile(uintptr(fd), "conn")
			c, err := net.FileConn(f)
			f.Close()
			if err != nil {
				served <- err
				return
			}
			if i == 0 {
				c.Close()
				continue
			}
			defer c.Close()
			if err := readRequest(bufio.NewReader(c)); err != nil {
				served <- err
				return
			}
			_, err = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
			served <- err
			return
		}
	}()
	res, err := Run(context.Background(), Config{Addr: addr, Method: "POST", BodyBytes: 3072, Mode: Closed, Concurrency: 1,
		Duration: 10 * time.Second, MaxRequests: 1, NewConn: true, Engine: EngineEpoll})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if res.Requests != 1 || res.Codes[200] != 1 || res.Errors != 0 {
		t.Fatalf("requests %d codes %v errors %v", res.Requests, res.Codes, res.ErrorKinds)
	}
	if lat := time.Duration(res.Latency.Max()) * time.Microsecond; lat < 500*time.Millisecond {
		t.Errorf("latency %s: the first SYN was not dropped, the test did not reach the opening connection", lat)
	}
}

// TestNextSpin: the polling window grows (from spinGrow, doubling, up to spinMax) while blocked waits end
// within spinMax, and halves when one lasts longer, to no polling once under spinGrow.
func TestNextSpin(t *testing.T) {
	us := int64(time.Microsecond)
	spin := int64(0)
	for _, want := range []int64{spinGrow, 2 * spinGrow, 4 * spinGrow, spinMax, spinMax} {
		if spin = nextSpin(spin, min(spin+5*us, spinMax)); spin != want { // each wait blocked just past the window
			t.Fatalf("grow: %d, want %d", spin, want)
		}
	}
	if got := nextSpin(spinMax, 3*us); got != spinMax {
		t.Errorf("a wait inside the window changed it: %d", got)
	}
	for range 3 {
		spin = nextSpin(spin, 2*spinMax)
	}
	if spin != 0 {
		t.Errorf("after three long waits the window is %d, want 0", spin)
	}
}

// TestNewConnServerClosesFirst: with a new connection per request and a server that says it closes each one,
// the generator leaves the closing to the server (the side that closes first holds the connection in
// TIME_WAIT, and on the generator's side that is an ephemeral port each) while its next request goes out on a
// new connection; no connection of the generator's is left open after the run. The server here answers 2 ms
// after each request and closes 1 ms after its response: a generator that closed first would leave every one
// of its connections in TIME_WAIT.
func TestNewConnServerClosesFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if readRequest(bufio.NewReader(c)) != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
				if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")); err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}()
		}
	}()
	const n = 20
	res, err := Run(context.Background(), Config{Addr: ln.Addr().String(), Method: "POST", BodyBytes: 3072, Mode: Closed, Concurrency: 1,
		Duration: 10 * time.Second, MaxRequests: n, NewConn: true, Engine: EngineEpoll})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != n || res.Codes[200] != n || res.Errors != 0 {
		t.Fatalf("requests %d codes %v errors %v", res.Requests, res.Codes, res.ErrorKinds)
	}
	// The generator's sockets are those whose remote port is the server's. Only the last connection may be
	// closed by the generator first (the run ends before the server's close arrives).
	states := generatorSockets(t, port)
	if tw := states["06"]; tw > n/4 {
		t.Errorf("%d of the generator's %d connections in TIME_WAIT: it closed them first (states %v)", tw, n, states)
	}
	for st, k := range states {
		if st == "01" || st == "08" { // ESTABLISHED, CLOSE_WAIT: a descriptor still open
			t.Errorf("%d of the generator's connections left open (state %s)", k, st)
		}
	}
}

// generatorSockets counts, by state (the kernel's hexadecimal code), the IPv4 TCP sockets whose remote port
// is port.
func generatorSockets(t *testing.T, port int) map[string]int {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	suffix := fmt.Sprintf(":%04X", port)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 3 && strings.HasSuffix(fs[2], suffix) {
			out[fs[3]]++
		}
	}
	return out
}

// TestSpinPolls: the closed loop polls before blocking only against a server on this host, with half the cores
// left to it; the open loop (its own schedule) never does.
func TestSpinPolls(t *testing.T) {
	for _, c := range []struct {
		name           string
		mode           Mode
		local          bool
		threads, cores int
		want           bool
	}{
		{"local server, 1 thread of 2 cores", Closed, true, 1, 2, true},
		{"remote server (a proxy in another namespace)", Closed, false, 1, 2, false},
		{"local server, every core taken", Closed, true, 2, 2, false},
		{"open loop", Open, true, 1, 4, false},
	} {
		if got := spinPolls(c.mode, c.local, c.threads, c.cores); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
