//go:build linux

package agent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/rawsock"
)

// This server and the load generator's engine (internal/load/loadgen/epoll_linux.go) are two epoll loops that are
// not merged into one, on purpose: what they share is the per-request system calls, the wait that keeps a
// busy loop's P and the start of one loop per locked thread, and that is one package (internal/source/rawsock).
// The rest is opposite. This loop accepts on a listening socket shared by every thread (EPOLLEXCLUSIVE), keeps
// connections in a map keyed by fd, is stopped by an eventfd, parses requests and answers each at once. The
// generator's loop owns a fixed array of connections it dials and redials itself (the epoll event carries the
// slot and the fd, to tell a lingering old socket from its slot's new one), parses responses, and runs on a
// clock: a timerfd for the open loop's schedule, adaptive polling before a blocking wait, time-outs swept from
// the loop, the ramp's end. A shared loop would be a framework of callbacks whose every indirect call lands on
// the per-request path that both exist to keep down to the kernel's own work (measured against wrk and nginx:
// docs/peers.md).
//
// EpollAvailable reports whether ServeEpoll works on this system.
const EpollAvailable = true

// ServeEpoll answers HTTP on ln the way Handler does (read the request and its body, answer 404 with no body)
// from one epoll loop per thread, so that the server costs little more than the kernel's work per request:
// a benchmark through a network path then measures the path, not Go's HTTP server (which costs ~13 µs of CPU
// per request on the lab machines). It speaks HTTP/1.1 keep-alive (and 1.0), Content-Length bodies and
// pipelined requests; chunked request bodies are answered 501 and heads over 8 KiB 431, each closing the
// connection. Connections idle for two minutes are closed. It returns when ctx ends, having closed every
// connection.
func ServeEpoll(ctx context.Context, ln *net.TCPListener) error {
	// A duplicate of the listening socket (non-blocking, as Go keeps it), for this server's own use.
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	lfd := -1
	if cerr := rc.Control(func(fd uintptr) { lfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	defer unix.Close(lfd)
	threads := runtime.GOMAXPROCS(0)
	loops := make([]*sloop, threads)
	for t := range loops {
		l, err := newSloop(lfd)
		if err != nil {
			for _, o := range loops[:t] {
				o.close()
			}
			return err
		}
		loops[t] = l
	}
	wait := rawsock.OnThreads(len(loops), func(i int) { loops[i].run() })
	<-ctx.Done()
	for _, l := range loops {
		l.stop()
	}
	wait()
	for _, l := range loops {
		l.close()
	}
	return nil
}

// The server's one answer; the second closes the connection.
var (
	resp404      = []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	resp404Close = []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	resp431      = []byte("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	resp501      = []byte("HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	resp400      = []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
)

const (
	maxReqHead  = 8 << 10
	idleTimeout = 2 * time.Minute
)

type sconn struct {
	fd int
	// buf holds request bytes not yet consumed (n of them).
	buf []byte
	n   int
	// bodyLeft is the current request's body still to arrive.
	bodyLeft int64
	// out is the answer not yet written; closeAfter closes once it is.
	out        []byte
	closeAfter bool
	last       time.Time
}

type sloop struct {
	lfd, ep, wake int
	conns         map[int]*sconn
	events        []unix.EpollEvent
	// free holds the read buffers of closed connections, for the next ones.
	free [][]byte
}

func newSloop(lfd int) (*sloop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	l := &sloop{lfd: lfd, ep: ep, wake: -1, conns: map[int]*sconn{}, events: make([]unix.EpollEvent, 256)}
	if l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		l.close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	// Every thread waits on the listening socket; EPOLLEXCLUSIVE wakes one of them per connection.
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(lfd)}); err != nil {
		l.close()
		return nil, err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, l.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wake)}); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// stop wakes the loop to end it.
func (l *sloop) stop() {
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(l.wake, one[:])
}

func (l *sloop) close() {
	for fd := range l.conns {
		unix.Close(fd)
	}
	l.conns = map[int]*sconn{}
	for _, fd := range []int{l.wake, l.ep} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	l.wake, l.ep = -1, -1
}

func (l *sloop) run() {
	lastSweep := time.Now()
	var w rawsock.Waiter
	for {
		n, e := w.Wait(l.ep, l.events, 1000)
		if e != 0 && e != unix.EINTR {
			return
		}
		now := time.Now()
		for _, ev := range l.events[:max(n, 0)] {
			switch int(ev.Fd) {
			case l.wake:
				return
			case l.lfd:
				l.accept(now)
			default:
				if c := l.conns[int(ev.Fd)]; c != nil {
					c.last = now
					l.serve(c, ev.Events)
				}
			}
		}
		if now.Sub(lastSweep) > time.Second {
			lastSweep = now
			for _, c := range l.conns {
				if now.Sub(c.last) > idleTimeout {
					l.drop(c)
				}
			}
		}
	}
}

func (l *sloop) accept(now time.Time) {
	for {
		fd, _, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: another thread took it, or none left; other errors: the next event retries
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		c := &sconn{fd: fd, last: now}
		if k := len(l.free); k > 0 {
			c.buf, l.free = l.free[k-1], l.free[:k-1]
		} else {
			c.buf = make([]byte, 16<<10)
		}
		if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}); err != nil {
			unix.Close(fd)
			continue
		}
		l.conns[fd] = c
	}
}

func (l *sloop) drop(c *sconn) {
	delete(l.conns, c.fd)
	if len(l.free) < 1024 {
		l.free = append(l.free, c.buf)
	}
	c.buf = nil
	rawsock.Close(c.fd)
}

// serve reads what arrived, answers every complete request in it and writes what it can.
func (l *sloop) serve(c *sconn, ev uint32) {
	if len(c.out) > 0 && (!l.flush(c) || !l.consume(c)) {
		return // still writing, or done; or the requests buffered while it wrote are answered
	}
	for {
		p := c.buf[c.n:]
		got, e := rawsock.Read(c.fd, p)
		switch {
		case e == unix.EAGAIN:
			return
		case e != 0 || got == 0:
			l.drop(c)
			return
		}
		c.n += got
		if !l.consume(c) {
			return
		}
		if got < len(p) && ev&(unix.EPOLLRDHUP|unix.EPOLLHUP) == 0 {
			return // drained; the next arrival is a new edge
		}
	}
}

// consume answers the complete requests in c.buf. It returns false when the connection is finished or
// waits for its output to drain.
func (l *sloop) consume(c *sconn) bool {
	for {
		if c.bodyLeft > 0 {
			k := int(min(int64(c.n), c.bodyLeft))
			c.bodyLeft -= int64(k)
			copy(c.buf, c.buf[k:c.n])
			c.n -= k
			if c.bodyLeft > 0 {
				return true
			}
			if !l.answer(c) {
				return false
			}
			continue
		}
		if c.n == 0 {
			return true
		}
		end := bytes.Index(c.buf[:c.n], []byte("\r\n\r\n"))
		if end < 0 || end+4 > maxReqHead {
			if c.n >= maxReqHead {
				c.out, c.closeAfter = resp431, true
				l.flush(c)
				return false
			}
			return true
		}
		length, keep, resp := parseRequestHead(c.buf[:end+2])
		if resp != nil {
			c.out, c.closeAfter = resp, true
			l.flush(c)
			return false
		}
		c.closeAfter = !keep
		k := end + 4
		copy(c.buf, c.buf[k:c.n])
		c.n -= k
		c.bodyLeft = length
		if length == 0 && !l.answer(c) {
			return false
		}
	}
}

// answer queues the 404 for the request just read and writes it.
func (l *sloop) answer(c *sconn) bool {
	c.out = resp404
	if c.closeAfter {
		c.out = resp404Close
	}
	return l.flush(c)
}

// flush writes c.out; it returns false when the connection is done (closed) or must wait to write.
func (l *sloop) flush(c *sconn) bool {
	for len(c.out) > 0 {
		r, e := rawsock.Send(c.fd, c.out)
		switch {
		case e == unix.EAGAIN:
			return false // the output edge resumes it (serve flushes first)
		case e != 0:
			l.drop(c)
			return false
		}
		c.out = c.out[r:]
	}
	if c.closeAfter {
		l.drop(c)
		return false
	}
	return true
}

// parseRequestHead reads a request's line and headers (without the blank line): the body length and
// whether the connection stays open, or the answer that refuses it.
func parseRequestHead(h []byte) (length int64, keep bool, refuse []byte) {
	line, rest, _ := bytes.Cut(h, []byte("\n"))
	line = bytes.TrimRight(line, "\r")
	// "METHOD SP target SP HTTP/1.x"
	sp := bytes.LastIndexByte(line, ' ')
	if sp < 0 || bytes.IndexByte(line, ' ') == sp || !bytes.HasPrefix(line[sp+1:], []byte("HTTP/1.")) || len(line) != sp+9 {
		return 0, false, resp400
	}
	keep = line[sp+8] == '1'
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		k, v, ok := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":"))
		if !ok {
			return 0, false, resp400
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 {
				return 0, false, resp400
			}
			length = n
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return 0, false, resp501
		case bytes.EqualFold(k, []byte("Connection")):
			switch {
			case bytes.EqualFold(v, []byte("close")):
				keep = false
			case bytes.EqualFold(v, []byte("keep-alive")):
				keep = true
			}
		}
	}
	return length, keep, nil
}
