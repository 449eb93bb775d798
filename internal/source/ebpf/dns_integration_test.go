package ebpf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// skipUnlessDNSTraceable skips tb unless KUBESLOW_INTEGRATION is set and the DNS tracer can run here.
func skipUnlessDNSTraceable(tb testing.TB) {
	tb.Helper()
	skipUnless(tb, "the DNS tracer", "a kernel >= 5.8 with cgroup v2 mounted", SupportedDNS)
}

// testZone is the test server's zone. By a name's first label: host* has one A (192.0.2.1) and one AAAA
// (2001:db8::1); nx* is NXDOMAIN; fail* SERVFAIL; drop* is never answered; flaky* is answered only from the
// second copy of a query (by client address and ID) on.
const testZone = "kubeslow.test."

// startDNSServer serves testZone on UDP port 53 of the first of hosts where that port is free, and returns
// its address and a function that stops it. Its socket is made in this process's cgroup at the time, so a
// DNS tracer attached to a child cgroup the process moves into later does not see the server's side.
func startDNSServer(hosts ...string) (netip.AddrPort, func(), error) {
	var pc net.PacketConn
	var err error
	for _, h := range hosts {
		if pc, err = net.ListenPacket("udp", net.JoinHostPort(h, "53")); err == nil {
			break
		}
	}
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if len(r.Question) != 1 {
			return
		}
		q := r.Question[0]
		label, _, _ := strings.Cut(q.Name, ".")
		m := new(dns.Msg)
		m.SetReply(r)
		switch {
		case strings.HasPrefix(label, "drop"):
			return
		case strings.HasPrefix(label, "flaky"):
			k := fmt.Sprint(w.RemoteAddr(), r.Id)
			mu.Lock()
			again := seen[k]
			seen[k] = true
			mu.Unlock()
			if !again {
				return
			}
		case strings.HasPrefix(label, "nx"):
			m.Rcode = dns.RcodeNameError
		case strings.HasPrefix(label, "fail"):
			m.Rcode = dns.RcodeServerFailure
		}
		if m.Rcode == dns.RcodeSuccess {
			hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 30}
			switch q.Qtype {
			case dns.TypeA:
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IPv4(192, 0, 2, 1)})
			case dns.TypeAAAA:
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: net.ParseIP("2001:db8::1")})
			}
		}
		_ = w.WriteMsg(m)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ActivateAndServe()
	}()
	return pc.LocalAddr().(*net.UDPAddr).AddrPort(), func() {
		_ = srv.Shutdown()
		<-done
	}, nil
}

// startDNSServer4 is startDNSServer on 127.0.0.1, or 127.0.53.53 where 127.0.0.1:53 is taken; it skips tb
// when neither can be had.
func startDNSServer4(tb testing.TB) (netip.AddrPort, func()) {
	srv, stop, err := startDNSServer("127.0.0.1", "127.0.53.53")
	if err != nil {
		tb.Skipf("no UDP port 53 free on a loopback address: %v", err)
	}
	return srv, stop
}

// asked is one query the test made, timed in Go, and what it expects the tracer to say of it.
type asked struct {
	client, server netip.AddrPort
	netns          uint64 // the network namespace's cookie the tracer gives (0 where it cannot)
	id, qtype      uint16
	before, after  uint64 // CLOCK_MONOTONIC before the first send and after the last read
	took           time.Duration
	answered       bool
	rcode          int
	sends          int
}

// ask sends a query for name and qtype to server from conn (a new socket when nil) and reads its answer:
// sends times, each followed by a read of at most wait (the last, unless the name is never answered: 5 s),
// as a resolver retransmits with the same ID on the same socket.
func ask(tb testing.TB, conn *dns.Conn, server netip.AddrPort, name string, qtype, id uint16, sends int, wait time.Duration) asked {
	tb.Helper()
	if conn == nil {
		c, err := dns.Dial("udp", server.String())
		if err != nil {
			tb.Fatal(err)
		}
		defer c.Close()
		conn = c
	}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = id
	a := asked{client: conn.LocalAddr().(*net.UDPAddr).AddrPort(), server: server, id: id, qtype: qtype, sends: sends}
	a.before = monotonicNS()
	start := time.Now()
	var r *dns.Msg
	for i := range sends {
		if err := conn.WriteMsg(m); err != nil {
			tb.Fatal(err)
		}
		d := wait
		if i == sends-1 && !strings.HasPrefix(name, "drop") {
			d = 5 * time.Second
		}
		_ = conn.SetReadDeadline(time.Now().Add(d))
		var err error
		if r, err = conn.ReadMsg(); err == nil {
			break
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			tb.Fatalf("reading the answer to %s: %v", name, err)
		}
	}
	a.took = time.Since(start)
	a.after = monotonicNS()
	if r != nil {
		if r.Id != id {
			tb.Fatalf("%s: answer of ID %d to query %d", name, r.Id, id)
		}
		a.answered, a.rcode = true, r.Rcode
	}
	return a
}

// otherNetns is a DNS server on 127.0.0.1:53 of a network namespace of its own and a client socket there,
// made by a thread of this process that ends with them (it is never returned to the scheduler's pool); the
// namespace lives on with the sockets.
type otherNetns struct {
	server netip.AddrPort
	conn   *dns.Conn
	cookie uint64
	stop   func()
}

// newOtherNetns makes an otherNetns: unshare(CLONE_NEWNET) on a locked thread, its loopback up (SIOCSIFFLAGS).
func newOtherNetns() (*otherNetns, error) {
	out := make(chan error, 1)
	o := &otherNetns{}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is in another namespace, it ends with this goroutine
		out <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
			}
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			ifr, err := unix.NewIfreq("lo")
			if err != nil {
				return err
			}
			if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
				return err
			}
			ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
			if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
				return fmt.Errorf("loopback up: %w", err)
			}
			if o.cookie, err = NetnsCookie(); err != nil {
				return err
			}
			if o.server, o.stop, err = startDNSServer("127.0.0.1"); err != nil {
				return err
			}
			if o.conn, err = dns.Dial("udp", o.server.String()); err != nil {
				o.stop()
				return err
			}
			return nil
		}()
	}()
	if err := <-out; err != nil {
		return nil, err
	}
	return o, nil
}

// TestIntegrationDNSLatency attaches the DNS tracer to a cgroup v2 directory of its own (never the root),
// moves this process into it, and asks a DNS server on 127.0.0.1:53 (and [::1]:53 where it can) A and AAAA
// queries for several names, some NXDOMAIN, one SERVFAIL, some never answered, some answered only when
// retransmitted, and one ID used twice on one socket, each timed in Go. Every query must come out of the
// tracer once, with its outcome, RCODE, QTYPE, retransmissions and the test cgroup's id, its eBPF
// interval (first transmission to answer) inside the Go-measured one (both CLOCK_MONOTONIC), and the
// aggregator's counts exact. No wall-clock threshold. Two more from another network namespace to a server
// on its own 127.0.0.1:53 (the same loopback address and port, where the first server has them): where the
// kernel lets the programs read it, each query carries its namespace's cookie, and those of the two
// namespaces stay apart in the pairing and the aggregates.
func TestIntegrationDNSLatency(t *testing.T) {
	skipUnlessDNSTraceable(t)
	srv4, stop4 := startDNSServer4(t)
	defer stop4()
	srv6, stop6, err6 := startDNSServer("::1")
	if err6 != nil {
		t.Logf("no DNS server on [::1]:53 (%v): IPv4 only", err6)
	} else {
		defer stop6()
	}

	// The pairing's timeout: well above an answer's time on a loaded machine (an answer after it would be
	// a timeout to the tracer), and above what the client waits for a dropped query.
	const timeout = 2 * time.Second
	const dropWait, flakyWait = 200 * time.Millisecond, 100 * time.Millisecond
	own, err := NetnsCookie()
	if err != nil {
		t.Fatal(err)
	}
	var made []asked
	var results []DNSResult
	var tr *DNSTracer
	childID, err := inChildCgroup(func(dir string) {
		var err error
		tr, err = StartDNS(context.Background(), dir, timeout)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		events := collect(tr.Events(), func(DNSResult) bool { return true })
		// Made in the test's cgroup (a socket's is its creator's at the time), as the others.
		other, err := newOtherNetns()
		if err != nil {
			t.Fatalf("a network namespace of the test's: %v", err)
		}
		defer other.stop()
		defer other.conn.Close()
		if other.cookie == own {
			t.Fatalf("two network namespaces, one cookie %d", own)
		}

		id := uint16(1000)
		next := func() uint16 { id++; return id }
		name := func(label string) string { return label + "." + testZone }
		for round := range 3 {
			for i := 1; i <= 4; i++ {
				for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
					made = append(made, ask(t, nil, srv4, name(fmt.Sprintf("host%d", i)), qt, next(), 1, 0))
				}
			}
			made = append(made,
				ask(t, nil, srv4, name(fmt.Sprintf("nx%d", 2*round)), dns.TypeA, next(), 1, 0),
				ask(t, nil, srv4, name(fmt.Sprintf("nx%d", 2*round+1)), dns.TypeAAAA, next(), 1, 0),
				ask(t, nil, srv4, name("fail"), dns.TypeA, next(), 1, 0),
				ask(t, nil, srv4, name(fmt.Sprintf("drop%d", round)), dns.TypeA, next(), 1, dropWait),
				ask(t, nil, srv4, name("flaky"), dns.TypeAAAA, next(), 2, flakyWait),
			)
			// One ID twice on one socket, one query after the other: two queries.
			conn, err := dns.Dial("udp", srv4.String())
			if err != nil {
				t.Fatal(err)
			}
			reused := next()
			made = append(made, ask(t, conn, srv4, name("host1"), dns.TypeA, reused, 1, 0), ask(t, conn, srv4, name("host2"), dns.TypeA, reused, 1, 0))
			conn.Close()
		}
		if err6 == nil {
			made = append(made,
				ask(t, nil, srv6, name("host1"), dns.TypeA, next(), 1, 0),
				ask(t, nil, srv6, name("host1"), dns.TypeAAAA, next(), 1, 0),
				ask(t, nil, srv6, name("nx6"), dns.TypeAAAA, next(), 1, 0),
				ask(t, nil, srv6, name("drop6"), dns.TypeAAAA, next(), 1, dropWait),
			)
		}
		for i := range made {
			made[i].netns = own
		}
		for _, m := range []asked{ask(t, other.conn, other.server, name("host3"), dns.TypeA, next(), 1, 0),
			ask(t, other.conn, other.server, name("drop-other"), dns.TypeA, next(), 1, dropWait)} {
			m.netns = other.cookie
			made = append(made, m)
		}
		if !tr.Netns() {
			t.Logf("the kernel's cgroup_skb programs cannot read the network namespace: every cookie 0")
			for i := range made {
				made[i].netns = 0
			}
		}

		// Wait for every query's end (the dropped ones: the timeout after their send), or 10s.
		events.waitFor(len(made))
		time.Sleep(3 * dnsPoll) // anything more (it must not come)
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		results = events.all()
	})
	if err != nil {
		t.Fatalf("cannot run the queries in a cgroup of their own: %v", err)
	}
	if n := tr.Undecodable(); n != 0 {
		t.Errorf("%d undecodable records", n)
	}
	if n, u := tr.Unmatched(), tr.Untracked(); n != 0 || u != 0 {
		t.Errorf("%d unmatched answers, %d untracked queries", n, u)
	}

	// Each query made, seen once: by its key and first transmission inside its Go interval.
	used := make([]bool, len(results))
	var ebpfLat, goLat []time.Duration
	for _, m := range made {
		i := slices.IndexFunc(results, func(r DNSResult) bool {
			return r.Client == m.client && r.Server == m.server && r.ID == m.id && r.SentNS >= m.before && r.SentNS <= m.after
		})
		if i < 0 || used[i] {
			t.Errorf("query %d %s -> %s (QTYPE %d) not seen (or seen for another)", m.id, m.client, m.server, m.qtype)
			continue
		}
		if r := results[i]; r.NetnsCookie != m.netns {
			t.Errorf("query %d %s -> %s: network namespace %d, want %d", m.id, m.client, m.server, r.NetnsCookie, m.netns)
			continue
		}
		used[i] = true
		r := results[i]
		if r.CgroupID != childID {
			t.Errorf("query %d: cgroup %d, the test cgroup's id is %d", m.id, r.CgroupID, childID)
		}
		if r.QType != m.qtype || r.Retransmits != m.sends-1 {
			t.Errorf("query %d: QTYPE %d, %d retransmissions; want %d, %d", m.id, r.QType, r.Retransmits, m.qtype, m.sends-1)
		}
		if !m.answered {
			if r.Outcome != TimedOut {
				t.Errorf("query %d, never answered: %+v", m.id, r)
			}
			continue
		}
		if r.Outcome != Answered || int(r.RCode) != m.rcode {
			t.Errorf("query %d: %v RCODE %d, want answered RCODE %d", m.id, r.Outcome, r.RCode, m.rcode)
		}
		// The kernel's first transmission .. answer is inside the Go exchange.
		if r.SentNS+uint64(r.Latency) > m.after || r.Latency > m.took {
			t.Errorf("query %d: eBPF [%d +%v] not inside Go's [%d, %d] (%v)", m.id, r.SentNS, r.Latency, m.before, m.after, m.took)
		}
		if m.sends == 1 {
			ebpfLat, goLat = append(ebpfLat, r.Latency), append(goLat, m.took)
		}
	}
	for i, r := range results {
		if !used[i] {
			t.Errorf("a query the test did not make: %+v", r)
		}
	}

	// The aggregator's counts, per server, against what was made.
	agg := NewDNSAggregator(time.Now())
	for _, r := range results {
		agg.Add(r)
	}
	for _, s := range agg.Snapshot(time.Now()) {
		var want DNSStats
		for _, m := range made {
			if m.server != s.Server || m.netns != s.NetnsCookie {
				continue
			}
			want.Queries++
			want.Retransmits += int64(m.sends - 1)
			switch m.qtype {
			case dns.TypeA:
				want.A++
			case dns.TypeAAAA:
				want.AAAA++
			}
			switch {
			case !m.answered:
				want.TimedOut++
			case m.rcode == dns.RcodeNameError:
				want.NXDomain++
			case m.rcode == dns.RcodeServerFailure:
				want.ServFail++
			case m.rcode == dns.RcodeSuccess:
				want.NoError++
			}
		}
		want.Answered = want.Queries - want.TimedOut
		got := DNSStats{Queries: s.Queries, Answered: s.Answered, TimedOut: s.TimedOut, Retransmits: s.Retransmits, A: s.A, AAAA: s.AAAA,
			NXDomain: s.NXDomain, ServFail: s.ServFail, NoError: s.NoError}
		if got != want || s.CgroupID != childID || s.OtherQType != 0 || s.OtherRCode != 0 || s.NoData != 0 {
			t.Errorf("aggregate for %s:\n%+v\nwant\n%+v", s.Server, s, want)
		}
		t.Logf("aggregate cgroup %d netns %d -> %s: %d queries (%d A, %d AAAA), %d answered, %d NXDOMAIN, %d SERVFAIL, %d timed out, %d retransmissions; p50 %v p99 %v max %v",
			s.CgroupID, s.NetnsCookie, s.Server, s.Queries, s.A, s.AAAA, s.Answered, s.NXDomain, s.ServFail, s.TimedOut, s.Retransmits, s.P50, s.P99, s.Max)
	}
	t.Logf("test cgroup id %d; %d queries made, %d results", childID, len(made), len(results))
	t.Logf("latency p50/p99 of the %d answered at once: eBPF %v/%v, Go's exchange %v/%v", len(ebpfLat),
		quantile(ebpfLat, 50), quantile(ebpfLat, 99), quantile(goLat, 50), quantile(goLat, 99))
}

// TestIntegrationDNSCloseDrains: queries answered just before Close are in the watch that Close ends. The
// tracer's programs write without waking the reader (BPF_RB_NO_WAKEUP), which reads every dnsPoll; Close
// detaches them and reads what is left, so each of the queries made in the last moment comes out of Events
// before it closes (until 2026-11-29 the ring buffer was closed unread: a watch lost up to its last dnsPoll,
// ~2 of a pod's lookups in 6 s).
func TestIntegrationDNSCloseDrains(t *testing.T) {
	skipUnlessDNSTraceable(t)
	srv4, stop4 := startDNSServer4(t)
	defer stop4()
	var made []asked
	var results []DNSResult
	_, err := inChildCgroup(func(dir string) {
		tr, err := StartDNS(context.Background(), dir, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		events := collect(tr.Events(), func(DNSResult) bool { return true })
		for id := uint16(2001); id <= 2005; id++ { // a few ms in all: well inside one poll
			made = append(made, ask(t, nil, srv4, "host1."+testZone, dns.TypeA, id, 1, 0))
		}
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		results = events.all()
	})
	if err != nil {
		t.Fatalf("cannot run the queries in a cgroup of their own: %v", err)
	}
	t.Logf("%d queries made right before Close, %d results", len(made), len(results))
	for _, m := range made {
		if !slices.ContainsFunc(results, func(r DNSResult) bool { return r.ID == m.id && r.Client == m.client && r.Outcome == Answered }) {
			t.Errorf("query %d, answered before Close, not among the results", m.id)
		}
	}
}

// BenchmarkDNSQueriesTraced asks the test server b.N queries (a new socket each, as a resolver does) from a
// cgroup of its own untraced, b.N times with the DNS tracer attached to that cgroup (the timed part), and
// b.N times untraced again; it reports the untraced mean and traced/untraced.
func BenchmarkDNSQueriesTraced(b *testing.B) {
	skipUnlessDNSTraceable(b)
	srv, stop := startDNSServer4(b)
	defer stop()
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion("host1."+testZone, dns.TypeA)
	loop := func() time.Duration {
		start := time.Now()
		for range b.N {
			if _, _, err := c.Exchange(m, srv.String()); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var untraced, traced time.Duration
	if _, err := inChildCgroup(func(dir string) {
		b.StopTimer()
		untraced = loop()
		tr, err := StartDNS(context.Background(), dir, 0)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range tr.Events() {
			}
		}()
		b.StartTimer()
		traced = loop()
		b.StopTimer()
		tr.Close()
		untraced = (untraced + loop()) / 2 // before and after: the machine's drift cancels out
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(untraced.Nanoseconds())/float64(b.N), "untraced-ns/op")
	b.ReportMetric(float64(traced.Nanoseconds())/float64(untraced.Nanoseconds()), "traced/untraced")
}

// BenchmarkDNSProgram runs the egress program in the kernel (BPF_PROG_TEST_RUN, nothing attached) on a TCP
// packet, a UDP packet to another port and a DNS query, and reports the kernel's time per run of each:
// what every packet of a traced cgroup pays, and what a query does. Runs of 256 at most, the ring buffer
// emptied between them, as the tracer's reader keeps it: below dnsWakeAt, so no record forces a wake-up (a
// backed-up ring, where each does, costs ~0.9 µs a record here) and none is dropped for a full ring (which
// is cheaper than sending it).
func BenchmarkDNSProgram(b *testing.B) {
	if os.Getenv("KUBESLOW_INTEGRATION") == "" {
		b.Skip("set KUBESLOW_INTEGRATION=1 (needs root)")
	}
	coll := loadDNS(b, netnsCookieSupported())
	prog := coll.Programs["queries"]
	rd, err := ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Close()
	client, server := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("10.96.0.10:53")
	query := dnsMsg(b, 1, "host1."+testZone, QTypeA, -1)
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"tcp", udpFrame(client, server, query, 0, ipprotoTCP)},
		{"udp-other-port", udpFrame(client, netip.MustParseAddrPort("10.0.0.1:8125"), query, 0, ipprotoUDP)},
		{"dns-query", udpFrame(client, server, query, 0, ipprotoUDP)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var total time.Duration
			for done := 0; done < b.N; {
				n := min(b.N-done, 256)
				ret, per, err := prog.Benchmark(tc.frame, n, nil)
				if err != nil {
					b.Fatal(err)
				}
				if ret != 1 {
					b.Fatalf("returned %d", ret)
				}
				total += per * time.Duration(n)
				done += n
				for {
					rd.SetDeadline(time.Now())
					if _, err := rd.Read(); err != nil {
						break
					}
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "kernel-ns/packet")
		})
	}
}
