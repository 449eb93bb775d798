package ebpf

import (
	"net/netip"
	"testing"
	"time"
)

// pairing feeds packets to a dnsPairer and keeps what it emits.
type pairing struct {
	p   *dnsPairer
	out []DNSResult
}

func newPairing(timeout time.Duration) *pairing { return &pairing{p: newDNSPairer(timeout)} }

func (pr *pairing) emit(r DNSResult)        { pr.out = append(pr.out, r) }
func (pr *pairing) add(pk DNSPacket)        { pr.p.add(pk, pr.emit) }
func (pr *pairing) expire(now uint64)       { pr.p.expire(now, pr.emit) }
func (pr *pairing) take() (out []DNSResult) { out, pr.out = pr.out, nil; return out }

var (
	pClient  = netip.MustParseAddrPort("10.0.0.2:40000")
	pClient2 = netip.MustParseAddrPort("10.0.0.2:40001")
	pServer  = netip.MustParseAddrPort("10.96.0.10:53")
	pServer2 = netip.MustParseAddrPort("10.96.0.11:53")
)

func q(ns uint64, client, server netip.AddrPort, id, qtype uint16) DNSPacket {
	return DNSPacket{TimeNS: ns, Dir: DNSQuery, CgroupID: 5, Client: client, Server: server, ID: id, Flags: 0x0100, QDCount: 1, QType: qtype}
}

func a(ns uint64, client, server netip.AddrPort, id uint16, rcode uint16, answers uint16) DNSPacket {
	return DNSPacket{TimeNS: ns, Dir: DNSAnswer, CgroupID: 5, Client: client, Server: server, ID: id, Flags: 0x8180 | rcode, QDCount: 1, ANCount: answers}
}

const ms = uint64(time.Millisecond)

func TestDNSPairing(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		pr := newPairing(0)
		pr.add(q(1000, pClient, pServer, 7, QTypeA))
		if out := pr.take(); len(out) != 0 {
			t.Fatalf("a query alone ended: %+v", out)
		}
		pr.add(a(1000+2*ms, pClient, pServer, 7, RCodeNoError, 2))
		want := DNSResult{CgroupID: 5, Client: pClient, Server: pServer, ID: 7, QType: QTypeA, SentNS: 1000,
			Outcome: Answered, Latency: 2 * time.Millisecond, ANCount: 2}
		if out := pr.take(); len(out) != 1 || out[0] != want {
			t.Errorf("%+v\nwant %+v", out, want)
		}
		if pr.p.n != 0 || len(pr.p.pending) != 0 {
			t.Errorf("still pending: %d %v", pr.p.n, pr.p.pending)
		}
	})

	t.Run("timed out by the clock", func(t *testing.T) {
		pr := newPairing(0) // DefaultDNSTimeout
		pr.add(q(1000, pClient, pServer, 7, QTypeAAAA))
		pr.expire(1000 + uint64(DefaultDNSTimeout) - 1)
		if out := pr.take(); len(out) != 0 {
			t.Fatalf("timed out early: %+v", out)
		}
		pr.expire(1000 + uint64(DefaultDNSTimeout))
		want := DNSResult{CgroupID: 5, Client: pClient, Server: pServer, ID: 7, QType: QTypeAAAA, SentNS: 1000, Outcome: TimedOut}
		if out := pr.take(); len(out) != 1 || out[0] != want {
			t.Errorf("%+v\nwant %+v", out, want)
		}
		// Its answer, late, matches nothing.
		pr.add(a(1000+uint64(DefaultDNSTimeout)+ms, pClient, pServer, 7, RCodeNoError, 1))
		if out := pr.take(); len(out) != 0 || pr.p.unmatched != 1 {
			t.Errorf("late answer: %+v, %d unmatched", out, pr.p.unmatched)
		}
	})

	t.Run("timed out by a later packet, before it", func(t *testing.T) {
		pr := newPairing(time.Second)
		pr.add(q(0, pClient, pServer, 1, QTypeA))
		pr.add(q(500*ms, pClient, pServer, 2, QTypeA))
		pr.add(q(1000*ms, pClient2, pServer, 3, QTypeA)) // times out the first
		pr.add(a(1001*ms, pClient2, pServer, 3, RCodeNoError, 1))
		out := pr.take()
		if len(out) != 2 || out[0].ID != 1 || out[0].Outcome != TimedOut || out[1].ID != 3 || out[1].Latency != time.Millisecond {
			t.Errorf("%+v", out)
		}
	})

	t.Run("retransmitted", func(t *testing.T) {
		pr := newPairing(0)
		pr.add(q(0, pClient, pServer, 9, QTypeA))
		pr.add(q(1000*ms, pClient, pServer, 9, QTypeA))
		pr.add(q(2000*ms, pClient, pServer, 9, QTypeA))
		pr.add(a(2500*ms, pClient, pServer, 9, RCodeNoError, 1))
		out := pr.take()
		if len(out) != 1 || out[0].Retransmits != 2 || out[0].SentNS != 0 || out[0].Latency != 2500*time.Millisecond {
			t.Errorf("%+v", out)
		}
		// A second answer (to a retransmission) matches nothing.
		pr.add(a(2600*ms, pClient, pServer, 9, RCodeNoError, 1))
		if out := pr.take(); len(out) != 0 || pr.p.unmatched != 1 {
			t.Errorf("second answer: %+v, %d unmatched", out, pr.p.unmatched)
		}
	})

	t.Run("retransmitted then timed out", func(t *testing.T) {
		pr := newPairing(time.Second)
		pr.add(q(0, pClient, pServer, 9, QTypeA))
		pr.add(q(900*ms, pClient, pServer, 9, QTypeA))
		pr.expire(1000 * ms) // the timeout runs from the first transmission
		if out := pr.take(); len(out) != 1 || out[0].Outcome != TimedOut || out[0].Retransmits != 1 {
			t.Errorf("%+v", out)
		}
	})

	t.Run("out of order", func(t *testing.T) {
		pr := newPairing(0)
		// glibc's parallel A and AAAA on one socket, another socket's query, and one to a second server;
		// their answers in another order.
		pr.add(q(10, pClient, pServer, 1, QTypeA))
		pr.add(q(20, pClient, pServer, 2, QTypeAAAA))
		pr.add(q(30, pClient2, pServer, 1, QTypeA))
		pr.add(q(40, pClient2, pServer2, 4, QTypeA))
		pr.add(a(100, pClient2, pServer2, 4, RCodeServFail, 0))
		pr.add(a(200, pClient, pServer, 2, RCodeNoError, 0))
		pr.add(a(300, pClient2, pServer, 1, RCodeNXDomain, 0))
		pr.add(a(400, pClient, pServer, 1, RCodeNoError, 1))
		out := pr.take()
		want := []struct {
			client, server netip.AddrPort
			id, qtype      uint16
			rcode          uint8
			lat            time.Duration
		}{
			{pClient2, pServer2, 4, QTypeA, RCodeServFail, 60},
			{pClient, pServer, 2, QTypeAAAA, RCodeNoError, 180},
			{pClient2, pServer, 1, QTypeA, RCodeNXDomain, 270},
			{pClient, pServer, 1, QTypeA, RCodeNoError, 390},
		}
		if len(out) != len(want) {
			t.Fatalf("%d results: %+v", len(out), out)
		}
		for i, w := range want {
			r := out[i]
			if r.Client != w.client || r.Server != w.server || r.ID != w.id || r.QType != w.qtype || r.RCode != w.rcode || r.Latency != w.lat || r.Outcome != Answered {
				t.Errorf("result %d: %+v, want %+v", i, r, w)
			}
		}
	})

	t.Run("ID reuse", func(t *testing.T) {
		pr := newPairing(time.Second)
		pr.add(q(0, pClient, pServer, 7, QTypeA))
		pr.add(a(5*ms, pClient, pServer, 7, RCodeNoError, 1))
		pr.add(q(10*ms, pClient, pServer, 7, QTypeAAAA)) // the same key again: a new query
		pr.add(a(13*ms, pClient, pServer, 7, RCodeNoError, 1))
		pr.add(q(20*ms, pClient, pServer, 7, QTypeA))
		pr.expire(1020 * ms)
		pr.add(q(1030*ms, pClient, pServer, 7, QTypeA)) // after a timeout: a new query, not a retransmission
		pr.add(a(1031*ms, pClient, pServer, 7, RCodeNoError, 1))
		out := pr.take()
		if len(out) != 4 {
			t.Fatalf("%d results: %+v", len(out), out)
		}
		if out[0].Latency != 5*time.Millisecond || out[1].Latency != 3*time.Millisecond || out[1].QType != QTypeAAAA ||
			out[2].Outcome != TimedOut || out[3].Latency != time.Millisecond || out[3].Retransmits != 0 {
			t.Errorf("%+v", out)
		}
	})

	t.Run("cgroups apart", func(t *testing.T) {
		// The same tuple in two network namespaces (a loopback resolver in two pods): two queries.
		pr := newPairing(0)
		other := q(0, pClient, pServer, 7, QTypeA)
		other.CgroupID = 6
		pr.add(q(0, pClient, pServer, 7, QTypeA))
		pr.add(other)
		pr.add(a(ms, pClient, pServer, 7, RCodeNoError, 1))
		out := pr.take()
		if len(out) != 1 || out[0].CgroupID != 5 || pr.p.n != 1 {
			t.Errorf("%+v, %d pending", out, pr.p.n)
		}
	})

	t.Run("network namespaces apart", func(t *testing.T) {
		// The same loopback tuple and cgroup in two network namespaces (a host-network process and one in
		// another node's namespace of the same kernel): two queries, each answered in its own namespace.
		lo, loSrv := netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("127.0.0.1:53")
		in := func(p DNSPacket, netns uint64) DNSPacket { p.NetnsCookie = netns; return p }
		pr := newPairing(0)
		pr.add(in(q(0, lo, loSrv, 7, QTypeA), 1))
		pr.add(in(q(ms, lo, loSrv, 7, QTypeA), 2))
		pr.add(in(a(3*ms, lo, loSrv, 7, RCodeNoError, 1), 2))
		out := pr.take()
		if len(out) != 1 || out[0].NetnsCookie != 2 || out[0].Latency != 2*time.Millisecond || out[0].Retransmits != 0 || pr.p.n != 1 {
			t.Errorf("%+v, %d pending", out, pr.p.n)
		}
		pr.expire(uint64(DefaultDNSTimeout))
		if out := pr.take(); len(out) != 1 || out[0].NetnsCookie != 1 || out[0].Outcome != TimedOut {
			t.Errorf("the other namespace's query: %+v", out)
		}
	})

	t.Run("server translated", func(t *testing.T) {
		// A host-network socket's query to a Service is seen after the DNAT to a backend, its answer from
		// the Service's address: one pending query of that socket and ID takes it.
		backend := netip.MustParseAddrPort("10.244.1.5:53")
		pr := newPairing(0)
		pr.add(q(0, pClient, backend, 7, QTypeA))
		pr.add(a(ms, pClient, pServer, 7, RCodeNoError, 1))
		out := pr.take()
		if len(out) != 1 || out[0].Server != backend || out[0].Latency != time.Millisecond || pr.p.unmatched != 0 {
			t.Errorf("%+v, %d unmatched", out, pr.p.unmatched)
		}
	})

	t.Run("one ID to several servers", func(t *testing.T) {
		// musl asks every nameserver at once, from one socket, with one ID: a query each.
		third := netip.MustParseAddrPort("10.96.0.12:53")
		pr := newPairing(time.Second)
		pr.add(q(0, pClient, pServer, 7, QTypeA))
		pr.add(q(1, pClient, pServer2, 7, QTypeA))
		pr.add(a(ms, pClient, third, 7, RCodeNoError, 1)) // neither: unmatched
		pr.add(a(2*ms, pClient, pServer2, 7, RCodeNoError, 1))
		pr.expire(2 * uint64(time.Second))
		out := pr.take()
		if len(out) != 2 || out[0].Server != pServer2 || out[0].Outcome != Answered || out[1].Server != pServer || out[1].Outcome != TimedOut || pr.p.unmatched != 1 {
			t.Errorf("%+v, %d unmatched", out, pr.p.unmatched)
		}
	})

	t.Run("answer without query", func(t *testing.T) {
		pr := newPairing(0)
		pr.add(a(ms, pClient, pServer, 7, RCodeNoError, 1))
		if out := pr.take(); len(out) != 0 || pr.p.unmatched != 1 {
			t.Errorf("%+v, %d unmatched", out, pr.p.unmatched)
		}
	})

	t.Run("untracked past the bound", func(t *testing.T) {
		pr := newPairing(time.Second)
		pr.p.max = 2
		for id := range uint16(3) {
			pr.add(q(uint64(id), pClient, pServer, id, QTypeA))
		}
		pr.add(q(3, pClient, pServer, 0, QTypeA)) // a retransmission is still counted
		if pr.p.n != 2 || pr.p.untracked != 1 {
			t.Errorf("%d pending, %d untracked", pr.p.n, pr.p.untracked)
		}
		pr.add(a(ms, pClient, pServer, 0, RCodeNoError, 1))
		pr.add(q(2*ms, pClient, pServer, 5, QTypeA)) // room again
		pr.expire(3 * uint64(time.Second))
		out := pr.take()
		if len(out) != 3 || out[0].Retransmits != 1 || out[1].ID != 1 || out[2].ID != 5 || pr.p.n != 0 {
			t.Errorf("%+v, %d pending", out, pr.p.n)
		}
	})

	t.Run("the expiry queue shrinks", func(t *testing.T) {
		pr := newPairing(time.Second)
		for i := range uint64(5000) {
			pr.add(q(i, pClient, pServer, uint16(i), QTypeA))
			pr.add(a(i, pClient, pServer, uint16(i), RCodeNoError, 1))
		}
		pr.add(q(5000, pClient, pServer, 1, QTypeA))
		pr.expire(2 * uint64(time.Second))
		if out := pr.take(); len(out) != 5001 || out[5000].Outcome != TimedOut {
			t.Fatalf("%d results", len(out))
		}
		if len(pr.p.queue)-pr.p.head != 0 || len(pr.p.queue) > 2*1024+2 { // compacted past 1024 popped
			t.Errorf("queue of %d, head %d", len(pr.p.queue), pr.p.head)
		}
	})
}
