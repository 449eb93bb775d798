//go:build linux

package loadgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/kubeslow/kubeslow/internal/source/rawsock"
)

// The epoll engine is wrk's design in Go: each of T locked OS threads runs its own epoll loop over its share
// of the connections. Sockets are non-blocking and registered once, edge-triggered, for input and output; a
// request is written the moment its connection is free and its response read when epoll says it arrived —
// one write and one read per keep-alive request, plus one epoll_wait per batch of ready connections. No
// goroutine per connection, no scheduler hand-off, no deadline timers (time-outs are swept from the loop),
// no allocation per request. The open loop's schedule is kept by a timerfd (the thread's timer slack set to
// 1 ns) armed shortly before each due time, then a short spin on epoll_wait(0).
//
// It is not merged with the agent's epoll HTTP server (internal/source/agent/epoll_linux.go): their common part, the
// raw per-request system calls and the P-keeping wait, is internal/source/rawsock; the loops around it differ in
// every other step (dial and redial into fixed slots, a clock and a schedule here; accept into a map and
// answer there), and the reasons are written out at agent.ServeEpoll.
//
// The goroutine engine (loadgen.go) remains for custom dialers (tests, namespaces entered by a dialer) and
// other systems.
const epollAvailable = true

const (
	stIdle = iota
	stConnecting
	stWriting
	stReading
)

// epollSpin is how long before a due time the open loop stops sleeping on its timerfd and polls.
const epollSpin = 200 * time.Microsecond

type econn struct {
	fd    int
	state uint8
	woff  int
	// buf holds the response head as it arrives; once the head is parsed, body bytes are read into it and
	// dropped.
	buf      []byte
	n        int
	h        head
	hasHead  bool
	bodyLeft int64
	// start is when the request's latency starts (the intended time in the open loop), sent when it was
	// started (for the time-out), both on the loop's clock (ns since the run's start).
	start, sent int64
}

type eloop struct {
	cfg    *Config
	req    []byte
	family int
	// rsa is the server's address as the kernel takes it (struct sockaddr_in or _in6).
	rsa     unsafe.Pointer
	rsaLen  int
	ep, tfd int
	conns   []econn
	events  []unix.EpollEvent
	w       *worker
	base    time.Time
	issued  *atomic.Int64
	pending []int32 // connections to (re)start, drained by the loop (no recursion on synchronous failures)
	closing bool
	waiter  rawsock.Waiter
	// open loop
	open                       bool
	idle                       []int32
	backlog                    []int64
	bhead                      int
	nextDue                    int64
	seq, stride                int64
	interval                   float64
	releasing                  bool
	armed                      int64
	planned, unsent            int64
	schedLate                  *hdrhistogram.Histogram
	endNs, hardNs, sweepEvery  int64
	lastSweep, timeoutNs, nInF int64
	// spinOn: the closed loop polls before it blocks (see wait), for up to spin ns.
	spinOn bool
	spin   int64
	// linger holds the connections whose response said the server closes them, until its end of stream
	// arrives (see lingerFD).
	linger []lingering
}

type lingering struct {
	fd    int
	since int64
}

func (l *eloop) now() int64 { return int64(time.Since(l.base)) }

// resolve turns host:port into the server's address as the kernel takes it (IPv4 first): a struct
// sockaddr_in or sockaddr_in6, its size and its family, and whether the address is this host's own.
func resolve(ctx context.Context, addr string) (unsafe.Pointer, int, int, bool, error) {
	rsa, n, family, ip, err := resolveIP(ctx, addr)
	return rsa, n, family, err == nil && localIP(ip), err
}

func resolveIP(ctx context.Context, addr string) (unsafe.Pointer, int, int, net.IP, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, 0, 0, nil, fmt.Errorf("port %q", port)
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, 0, 0, nil, err
	}
	sort.SliceStable(ips, func(i, j int) bool { return ips[i].IP.To4() != nil && ips[j].IP.To4() == nil })
	for _, ip := range ips {
		if v4 := ip.IP.To4(); v4 != nil {
			r := &unix.RawSockaddrInet4{Family: unix.AF_INET}
			copy(r.Addr[:], v4)
			binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&r.Port))[:], uint16(p))
			return unsafe.Pointer(r), unix.SizeofSockaddrInet4, unix.AF_INET, ip.IP, nil
		}
		if v6 := ip.IP.To16(); v6 != nil {
			r := &unix.RawSockaddrInet6{Family: unix.AF_INET6}
			copy(r.Addr[:], v6)
			binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&r.Port))[:], uint16(p))
			if ip.Zone != "" {
				if ifi, err := net.InterfaceByName(ip.Zone); err == nil {
					r.Scope_id = uint32(ifi.Index)
				}
			}
			return unsafe.Pointer(r), unix.SizeofSockaddrInet6, unix.AF_INET6, ip.IP, nil
		}
	}
	return nil, 0, 0, nil, fmt.Errorf("%s: no address", host)
}

// runEpoll is Run on the epoll engine.
func runEpoll(ctx context.Context, cfg *Config, req []byte, res *Result) error {
	rsa, rsaLen, family, local, err := resolve(ctx, cfg.Addr)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", cfg.Addr, err)
	}
	threads := defaultThreads(runtime.GOMAXPROCS(0), cfg.Concurrency, local, cfg.NewConn)
	if cfg.Threads > 0 {
		threads = cfg.Threads
	} else if cfg.Mode == Open {
		// Each thread keeps every threads-th due time: at low rates one thread keeps the schedule precisely.
		threads = max(1, min(threads, int(cfg.Rate/20000)+1))
	}
	res.Threads = threads
	loops := make([]*eloop, threads)
	var issued atomic.Int64
	start := time.Now()
	for t := range loops {
		n := cfg.Concurrency / threads
		if t < cfg.Concurrency%threads {
			n++
		}
		l := &eloop{cfg: cfg, req: req, rsa: rsa, rsaLen: rsaLen, family: family, ep: -1, tfd: -1, conns: make([]econn, n),
			events: make([]unix.EpollEvent, n+1), base: start, issued: &issued, schedLate: newHist(),
			w:    &worker{cfg: cfg, lat: newHist(), late: newHist(), codes: map[int]int64{}, errs: map[string]int64{}},
			open: cfg.Mode == Open, seq: int64(t), stride: int64(threads), endNs: int64(cfg.Duration), timeoutNs: int64(cfg.Timeout),
			linger: make([]lingering, 0, 4*n+4),
			spinOn: spinPolls(cfg.Mode, local, threads, runtime.NumCPU())}
		l.hardNs = l.endNs + l.timeoutNs
		l.sweepEvery = min(max(l.timeoutNs/20, int64(time.Millisecond)), int64(250*time.Millisecond))
		if l.open {
			l.interval = float64(time.Second) / cfg.Rate
			l.nextDue = int64(float64(l.seq) * l.interval)
			l.releasing = true
		}
		for i := range l.conns {
			l.conns[i] = econn{fd: -1, buf: make([]byte, 16<<10)}
		}
		if err := l.setup(); err != nil {
			for _, o := range loops[:t] {
				o.teardown()
			}
			l.teardown()
			return err
		}
		loops[t] = l
	}
	rawsock.OnThreads(len(loops), func(i int) {
		// The timer slack goes with the thread, which exits with the loop.
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		loops[i].run(ctx)
		loops[i].teardown()
	})()
	res.Elapsed = time.Since(start)
	for _, l := range loops {
		res.Planned += l.planned
		res.Unsent += l.unsent
		res.SchedLate.Merge(l.schedLate)
		l.w.addTo(res)
	}
	return nil
}

func (l *eloop) setup() error {
	var err error
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	if !l.open {
		return nil
	}
	if l.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return fmt.Errorf("timerfd: %w", err)
	}
	return unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, l.tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1})
}

func (l *eloop) teardown() {
	for i := range l.conns {
		l.closeFD(&l.conns[i])
	}
	for _, g := range l.linger {
		rawsock.Close(g.fd)
	}
	l.linger = l.linger[:0]
	for _, fd := range []int{l.tfd, l.ep} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	l.tfd, l.ep = -1, -1
}

func (l *eloop) run(ctx context.Context) {
	for i := range l.conns {
		if l.open {
			l.idle = append(l.idle, int32(i))
		} else {
			l.pending = append(l.pending, int32(i))
		}
	}
	for {
		now := l.now()
		if now >= l.endNs {
			l.closing = true
		}
		if l.open {
			l.release(now)
		}
		// Only the connections freed before this pass: one whose next request fails at once (a refused
		// connect) waits for the next pass, which sees the clock again, so that a run of failures ends with
		// the run. The slice is reused: no allocation per request.
		k := len(l.pending)
		for _, i := range l.pending[:k] {
			l.next(int(i), now)
		}
		l.pending = append(l.pending[:0], l.pending[k:]...)
		if now-l.lastSweep >= l.sweepEvery {
			l.lastSweep = now
			if ctx.Err() != nil {
				l.unsent += int64(len(l.backlog) - l.bhead)
				return
			}
			l.sweep(now)
			if len(l.pending) > 0 {
				continue
			}
		}
		// Finished: the closed loop when every connection has stopped (end of time or of the request
		// limit); the open loop when nothing more is due and the backlog is sent (or its time is up).
		if l.nInF == 0 && len(l.pending) == 0 && (!l.open || (l.closing || !l.releasing) && (len(l.backlog) == l.bhead || now >= l.hardNs)) {
			l.unsent += int64(len(l.backlog) - l.bhead)
			return
		}
		n, e := l.wait(now)
		if e != 0 && e != unix.EINTR {
			return
		}
		for _, ev := range l.events[:max(n, 0)] {
			if ev.Fd < 0 {
				var b [8]byte
				_, _ = unix.Read(l.tfd, b[:])
				l.armed = 0
				continue
			}
			if int(ev.Pad) != l.conns[ev.Fd].fd {
				l.lingerEvent(int(ev.Pad))
				continue
			}
			l.handle(int(ev.Fd), ev.Events)
		}
	}
}

// wait waits for events. The closed loop with requests in flight first polls for up to its spin window
// (spinOn): a thread that blocks is woken by the server's response, and through loopback that wake-up (an
// inter-processor interrupt; on a virtual machine an exit to the hypervisor) is paid on the server's core, in
// the server's system call — measured against nginx at one thread, the server then slept and woke more per
// request under kubeslow than under wrk, whose slower loop seldom blocks. The window adapts as a guest's halt
// polling does: it doubles (from spinGrow, up to spinMax) when a blocked wait ended within spinMax, and halves
// when one lasted longer (to none under spinGrow), so a server that answers slowly (a remote one) gets no polling.
func (l *eloop) wait(now int64) (int, unix.Errno) {
	ms := l.waitMs(now)
	if ms == 0 || !l.spinOn || l.nInF == 0 {
		return l.waiter.Wait(l.ep, l.events, ms)
	}
	for deadline := now + l.spin; l.spin > 0; {
		if n, e := l.waiter.Wait(l.ep, l.events, 0); n > 0 || e != 0 {
			return n, e
		}
		if l.now() >= deadline {
			break
		}
	}
	before := l.now()
	n, e := l.waiter.Wait(l.ep, l.events, ms)
	if n > 0 {
		l.spin = nextSpin(l.spin, l.now()-before)
	}
	return n, e
}

// spinPolls is whether the closed loop polls before it blocks (see wait): only against a server on this host
// (a loopback or local address), whose wake-ups the polling saves, and only when the generator's threads take
// at most half of the cores, so that it never takes the one that server needs. Against any other server the
// loop blocks as wrk's does: through the lab's Traefik (another namespace, a proxy answering in ~190 µs), the
// polling loop spent 38–47 µs of CPU per request against wrk's 37–45 and the blocking one 37–40 (hack/bench-ingress.sh,
// docs/netlab.md), while the polling caught responses often enough never to switch itself off.
func spinPolls(mode Mode, local bool, threads, cores int) bool {
	return mode != Open && local && 2*threads <= cores
}

// nextSpin is the polling window after a wait that blocked for blocked ns before events came.
func nextSpin(spin, blocked int64) int64 {
	switch {
	case blocked > spinMax:
		if spin/2 < spinGrow {
			return 0
		}
		return spin / 2
	case blocked > spin:
		return min(spinMax, max(spinGrow, 2*spin))
	}
	return spin
}

// The closed loop's polling window before a blocking wait (see wait).
const (
	spinMax  = int64(50 * time.Microsecond)
	spinGrow = int64(10 * time.Microsecond)
)

// waitMs is how long epoll_wait may sleep: until the sweep, and in the open loop until shortly before the
// next due time (on the timerfd, which has sub-millisecond precision; epoll_wait's own is 1 ms).
func (l *eloop) waitMs(now int64) int {
	if len(l.pending) > 0 {
		return 0
	}
	until := l.lastSweep + l.sweepEvery - now
	if l.open && l.releasing && !l.closing {
		d := l.nextDue - now
		if d <= int64(epollSpin) {
			return 0
		}
		if at := l.nextDue - int64(epollSpin); at != l.armed {
			ts := unix.NsecToTimespec(at - now)
			if unix.TimerfdSettime(l.tfd, 0, &unix.ItimerSpec{Value: ts}, nil) == nil {
				l.armed = at
			}
		}
		until = min(until, d)
	}
	if !l.closing {
		until = min(until, l.endNs-now)
	}
	return int(max(until, 0)/int64(time.Millisecond)) + 1
}

// release hands out the open loop's due times up to now: to an idle connection, else to the backlog.
func (l *eloop) release(now int64) {
	for l.releasing && l.nextDue <= now {
		if l.nextDue >= l.endNs || l.cfg.MaxRequests > 0 && l.issued.Add(1) > l.cfg.MaxRequests {
			l.releasing = false
			return
		}
		if len(l.backlog)-l.bhead >= 1<<20 {
			return // the backlog is full: later due times are released late, and their lateness recorded
		}
		due := l.nextDue
		l.planned++
		_ = l.schedLate.RecordValue(usClamp(now - due))
		l.seq += l.stride
		l.nextDue = int64(float64(l.seq) * l.interval)
		if k := len(l.idle); k > 0 {
			i := l.idle[k-1]
			l.idle = l.idle[:k-1]
			l.send(int(i), due, now)
		} else {
			l.backlog = append(l.backlog, due)
		}
	}
}

// next gives a free connection its next request, or leaves it idle.
func (l *eloop) next(i int, now int64) {
	if l.open {
		if l.bhead < len(l.backlog) && now < l.hardNs {
			due := l.backlog[l.bhead]
			l.bhead++
			if l.bhead == len(l.backlog) {
				l.backlog, l.bhead = l.backlog[:0], 0
			}
			l.send(i, due, now)
			return
		}
		l.idle = append(l.idle, int32(i))
		return
	}
	if l.closing || l.cfg.MaxRequests > 0 && l.issued.Add(1) > l.cfg.MaxRequests {
		l.closeFD(&l.conns[i])
		return
	}
	l.send(i, now, now)
}

func usClamp(ns int64) int64 { return max(1, min(ns/1000, histMax)) }

// send starts a request on connection i.
func (l *eloop) send(i int, start, now int64) {
	c := &l.conns[i]
	c.start, c.sent = start, now
	l.nInF++
	if l.open {
		_ = l.w.late.RecordValue(usClamp(now - start))
	}
	if c.fd >= 0 {
		c.state = stWriting
		l.write(i)
		return
	}
	// Raw system calls: none of these block on a non-blocking socket. A new connection per request makes
	// five of them per request (socket, connect, sendto, epoll_ctl, read) plus the close.
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(l.family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		l.fail(i, "connect")
		return
	}
	c.fd, c.state = int(fd), stConnecting
	if !l.cfg.NewConn {
		// A keep-alive connection's requests are each written whole, but a request following a response the
		// server sent before it read the whole request would wait behind Nagle for an ACK. A connection that
		// carries one request needs this only when the request does not fit in one write (see write).
		setNoDelay(c.fd)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_CONNECT, fd, uintptr(l.rsa), uintptr(l.rsaLen)); e != 0 && e != unix.EINPROGRESS {
		l.fail(i, "connect")
		return
	}
	l.w.conns++
	// The request is written at once, not when epoll reports the connection complete: through loopback and
	// the host's own virtual links the handshake completes within connect (EINPROGRESS notwithstanding), and
	// this saves a pass of the loop per connection; through a real network the write finds the connection
	// still opening (EAGAIN, one failed system call per connection) and the output edge resumes it.
	if l.write(i); c.fd < 0 {
		return // failed (refused)
	}
	// Registered after connect: an unconnected socket polls as hung up. Adding reports the current state:
	// a connection still opening is an output edge when it completes; a response already there an input
	// edge at once.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(i), Pad: int32(fd)}
	if _, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(l.ep), unix.EPOLL_CTL_ADD, fd, uintptr(unsafe.Pointer(&ev)), 0, 0); e != 0 {
		l.fail(i, "connect")
	}
}

func setNoDelay(fd int) {
	one := int32(1)
	_, _, _ = unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0)
}

func (l *eloop) handle(i int, ev uint32) {
	c := &l.conns[i]
	switch c.state {
	case stConnecting, stWriting:
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			l.write(i)
		}
		// The same edge may carry the response of a server that answered before it had the whole request
		// (edge-triggered: there will be no other edge for it).
		if c.state == stReading && ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.read(i, ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
		}
	case stReading:
		// An output edge alone (the request's bytes acknowledged; a connection registered after its request
		// was written) has nothing to read.
		if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.read(i, ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
		}
	case stIdle:
		// An idle keep-alive connection the server closed (or wrote to out of turn): drop it quietly, the
		// next request opens a new one.
		if c.fd >= 0 && ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.closeFD(c)
		}
	}
}

// write writes what is left of the request. On a connection still opening, EAGAIN means it has not completed
// (the output edge resumes the write) and an error is a failed connect (refused, unreachable, reset).
func (l *eloop) write(i int) {
	c := &l.conns[i]
	for c.woff < len(l.req) {
		r, e := rawsock.Send(c.fd, l.req[c.woff:])
		switch {
		case e == unix.EAGAIN:
			if c.woff > 0 && l.cfg.NewConn && c.state == stWriting {
				// The rest goes out in later writes: without TCP_NODELAY its last segment could wait for
				// the server's ACK of the first.
				setNoDelay(c.fd)
			}
			return // the output edge resumes it
		case e != 0:
			if c.state == stConnecting {
				l.fail(i, "connect")
			} else {
				l.fail(i, "write")
			}
			return
		}
		c.woff += r
		c.state = stWriting
	}
	c.woff, c.state = 0, stReading
}

// read reads what arrived. hup is whether the peer has closed: the end of the stream arrived with the
// data, and will not be another edge.
func (l *eloop) read(i int, hup bool) {
	c := &l.conns[i]
	for {
		p := c.buf[c.n:]
		n, e := rawsock.Read(c.fd, p)
		switch {
		case e == unix.EAGAIN:
			return
		case e != 0:
			l.fail(i, "read")
			return
		case n == 0:
			if c.hasHead && c.h.toClose() {
				l.complete(i, false, true)
			} else {
				l.fail(i, "read")
			}
			return
		}
		if c.hasHead {
			if c.bodyLeft -= int64(n); c.bodyLeft < 0 && !c.h.toClose() {
				l.fail(i, "protocol") // bytes past the response: nothing was asked for them
				return
			}
		} else {
			c.n += n
			h, ok, err := parseHead(c.buf[:c.n])
			if err != nil {
				l.fail(i, "protocol")
				return
			}
			if ok {
				c.h, c.hasHead = h, true
				c.bodyLeft = max(h.length, 0) - int64(c.n-h.size)
				c.n = 0
				if c.bodyLeft < 0 && !h.toClose() {
					l.fail(i, "protocol")
					return
				}
			}
		}
		if c.hasHead && !c.h.toClose() && c.bodyLeft == 0 {
			l.complete(i, c.h.keep, hup)
			return
		}
		if n < len(p) && !hup && !(c.hasHead && c.h.toClose()) {
			return // drained: edge-triggered, the next arrival is a new edge
		}
	}
}

// complete ends connection i's request with its response. hup is whether the server's end of the stream
// has arrived.
func (l *eloop) complete(i int, keep, hup bool) {
	c := &l.conns[i]
	now := l.now()
	l.w.record(c.h.code, "", time.Duration(now-c.start))
	switch {
	case !keep && !hup && len(l.linger) < cap(l.linger):
		l.lingerFD(c, now)
	case !keep || l.cfg.NewConn:
		l.closeFD(c)
	}
	if l.open {
		l.done(c, i)
		return
	}
	// The closed loop sends the connection's next request now, before reading the other responses of this
	// pass: the server works on it meanwhile (on another core) instead of waiting for the whole batch. No
	// recursion: a request that fails at once goes through fail, which leaves the connection to the next pass.
	c.state, c.woff, c.n, c.hasHead, c.bodyLeft = stIdle, 0, 0, false, 0
	l.nInF--
	if now >= l.endNs {
		l.closing = true
	}
	l.next(i, now)
}

func (l *eloop) fail(i int, kind string) {
	c := &l.conns[i]
	l.w.record(0, kind, 0)
	l.closeFD(c)
	l.done(c, i)
}

func (l *eloop) done(c *econn, i int) {
	c.state, c.woff, c.n, c.hasHead, c.bodyLeft = stIdle, 0, 0, false, 0
	l.nInF--
	l.pending = append(l.pending, int32(i))
}

func (l *eloop) closeFD(c *econn) {
	if c.fd >= 0 {
		rawsock.Close(c.fd) // also removes it from the epoll set
		c.fd = -1
	}
}

// lingerFD leaves the server to close the connection its response said it closes, rather than closing it
// first: the side that closes first keeps the connection in TIME_WAIT for a minute, and on this side that
// holds one of the ~28,000 ephemeral ports to the server's address each — at thousands of new connections a
// second, connect soon fails with EADDRNOTAVAIL wherever the kernel does not reuse them (only loopback, by
// default). The slot opens its next connection at once; the kept one stays in the epoll set, known by its
// descriptor in the event's data, and is closed when the server's end of stream arrives (lingerEvent), when it
// has waited longer than the time-out (sweep) or at the end of the run.
func (l *eloop) lingerFD(c *econn, now int64) {
	l.linger = append(l.linger, lingering{c.fd, now})
	c.fd = -1
}

// lingerEvent reads a kept connection: once the server's end of stream (or an error) arrives it is closed.
func (l *eloop) lingerEvent(fd int) {
	var b [256]byte
	for {
		n, e := rawsock.Read(fd, b[:])
		if e == unix.EAGAIN {
			return
		}
		if e != 0 || n == 0 {
			break
		}
	}
	for k, g := range l.linger {
		if g.fd == fd {
			rawsock.Close(fd)
			l.linger[k] = l.linger[len(l.linger)-1]
			l.linger = l.linger[:len(l.linger)-1]
			return
		}
	}
}

// sweep fails the requests that have waited longer than the time-out.
func (l *eloop) sweep(now int64) {
	kept := l.linger[:0]
	for _, g := range l.linger {
		if now-g.since > l.timeoutNs {
			rawsock.Close(g.fd)
		} else {
			kept = append(kept, g)
		}
	}
	l.linger = kept
	for i := range l.conns {
		if c := &l.conns[i]; c.state != stIdle && now-c.sent > l.timeoutNs {
			l.fail(i, "timeout")
		}
	}
}
