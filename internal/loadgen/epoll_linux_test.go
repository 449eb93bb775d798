package loadgen

import (
	"bufio"
	"context"
	"net"
	"os"
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
