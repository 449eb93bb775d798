package ebpf

import (
	"net/netip"
	"testing"
	"time"
)

func TestDNSAggregator(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := NewDNSAggregator(t0)
	coredns, upstream := netip.MustParseAddrPort("10.96.0.10:53"), netip.MustParseAddrPort("[2001:db8::53]:53")
	ans := func(cg uint64, srv netip.AddrPort, qtype uint16, rcode uint8, answers uint16, lat time.Duration) DNSResult {
		return DNSResult{CgroupID: cg, Server: srv, QType: qtype, Outcome: Answered, RCode: rcode, ANCount: answers, Latency: lat}
	}
	// cgroup 5 -> coredns: 100 A answered in 1..100 ms, 50 AAAA of which 10 NODATA, 3 NXDOMAIN, 2 SERVFAIL,
	// 1 REFUSED, 1 truncated (and empty: NODATA too); 4 A timed out (one retransmitted twice); 1 MX.
	for i := 1; i <= 100; i++ {
		a.Add(ans(5, coredns, QTypeA, RCodeNoError, 1, time.Duration(i)*time.Millisecond))
	}
	for i := range 50 {
		a.Add(ans(5, coredns, QTypeAAAA, RCodeNoError, uint16(min(i%5, 1)), 50*time.Millisecond))
	}
	a.Add(ans(5, coredns, QTypeA, RCodeNXDomain, 0, 50*time.Millisecond))
	a.Add(ans(5, coredns, QTypeA, RCodeNXDomain, 0, 50*time.Millisecond))
	a.Add(ans(5, coredns, QTypeAAAA, RCodeNXDomain, 0, 50*time.Millisecond))
	a.Add(ans(5, coredns, QTypeA, RCodeServFail, 0, 50*time.Millisecond))
	a.Add(ans(5, coredns, QTypeA, RCodeServFail, 0, 50*time.Millisecond))
	a.Add(ans(5, coredns, QTypeA, 5, 0, 50*time.Millisecond))
	tc := ans(5, coredns, QTypeA, RCodeNoError, 0, 50*time.Millisecond)
	tc.Truncated = true
	a.Add(tc)
	for i := range 4 {
		r := DNSResult{CgroupID: 5, Server: coredns, QType: QTypeA, Outcome: TimedOut}
		if i == 1 {
			r.Retransmits = 2
		}
		a.Add(r)
	}
	a.Add(ans(5, coredns, 15, RCodeNoError, 1, 50*time.Millisecond))
	// cgroup 3 -> upstream: one answer past the histogram's top; cgroup 3 -> coredns: timeouts only.
	a.Add(ans(3, upstream, QTypeA, RCodeNoError, 1, 20*time.Minute))
	a.Add(DNSResult{CgroupID: 3, Server: coredns, Outcome: TimedOut})

	got := a.Snapshot(t0.Add(2 * time.Second))
	if len(got) != 3 {
		t.Fatalf("%d keys: %+v", len(got), got)
	}
	for i, k := range []DNSKey{{CgroupID: 3, Server: coredns}, {CgroupID: 3, Server: upstream}, {CgroupID: 5, Server: coredns}} {
		if got[i].DNSKey != k {
			t.Errorf("key %d: %+v, want %+v", i, got[i].DNSKey, k)
		}
	}
	near := func(d, want time.Duration) bool { return d >= want*99/100 && d <= want*101/100 }
	s := got[2]
	want := DNSStats{DNSKey: DNSKey{CgroupID: 5, Server: coredns}, Queries: 162, Answered: 158, TimedOut: 4, Retransmits: 2, PerSecond: 81,
		NoError: 152, NoData: 11, NXDomain: 3, ServFail: 2, OtherRCode: 1, Truncated: 1, A: 110, AAAA: 51, OtherQType: 1}
	lat := [3]time.Duration{s.P50, s.P99, s.Max}
	s.P50, s.P99, s.Max = 0, 0, 0
	if s != want {
		t.Errorf("5 -> coredns:\n%+v\nwant\n%+v", s, want)
	}
	if !near(lat[0], 50*time.Millisecond) || !near(lat[1], 98*time.Millisecond) || !near(lat[2], 100*time.Millisecond) {
		t.Errorf("5 -> coredns latencies p50/p99/max: %v", lat)
	}
	if s := got[1]; s.Queries != 1 || !near(s.Max, 10*time.Minute) {
		t.Errorf("3 -> upstream: %+v", s)
	}
	if s := got[0]; s.Queries != 1 || s.TimedOut != 1 || s.Answered != 0 || s.P50 != 0 || s.Max != 0 || s.OtherQType != 1 {
		t.Errorf("3 -> coredns (timeouts only): %+v", s)
	}
	if s := a.Snapshot(t0); s[0].PerSecond != 0 {
		t.Errorf("empty window: %+v", s[0])
	}
	a.Reset(t0.Add(time.Minute))
	if s := a.Snapshot(t0.Add(2 * time.Minute)); len(s) != 0 {
		t.Errorf("after Reset: %+v", s)
	}
}

// TestDNSClientAggregator: by client address, whatever the cgroup (the pods of a host whose runtime keeps them in
// one v2 cgroup); an IPv4-mapped client is its IPv4 address; the servers stay apart.
func TestDNSClientAggregator(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := NewDNSClientAggregator(t0)
	coredns := netip.MustParseAddrPort("10.96.0.10:53")
	podA, podB := netip.MustParseAddrPort("10.244.1.5:40000"), netip.MustParseAddrPort("[::ffff:10.244.1.6]:40001")
	for i := range 4 {
		a.Add(DNSResult{CgroupID: uint64(7 + i%2), Client: podA, Server: coredns, QType: QTypeA, Outcome: Answered, ANCount: 1, Latency: time.Millisecond})
	}
	a.Add(DNSResult{CgroupID: 7, Client: podB, Server: coredns, QType: QTypeAAAA, Outcome: TimedOut})
	a.Add(DNSResult{CgroupID: 7, Client: podB, Server: netip.MustParseAddrPort("10.96.0.11:53"), QType: QTypeA, Outcome: TimedOut})
	got := a.Snapshot(t0.Add(time.Second))
	if len(got) != 3 {
		t.Fatalf("%d keys: %+v", len(got), got)
	}
	want := []DNSKey{{Client: podA.Addr(), Server: coredns}, {Client: netip.MustParseAddr("10.244.1.6"), Server: coredns},
		{Client: netip.MustParseAddr("10.244.1.6"), Server: netip.MustParseAddrPort("10.96.0.11:53")}}
	for i, k := range want {
		if got[i].DNSKey != k {
			t.Errorf("key %d: %+v, want %+v", i, got[i].DNSKey, k)
		}
	}
	if got[0].Queries != 4 || got[0].A != 4 || got[1].TimedOut != 1 || got[1].AAAA != 1 {
		t.Errorf("counts: %+v", got)
	}

	// A loopback client is every network namespace's: the same address in two namespaces is two keys.
	a = NewDNSClientAggregator(t0)
	lo, loSrv := netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("127.0.0.1:53")
	a.Add(DNSResult{NetnsCookie: 9, Client: lo, Server: loSrv, Outcome: TimedOut})
	a.Add(DNSResult{NetnsCookie: 9, Client: lo, Server: loSrv, Outcome: TimedOut})
	a.Add(DNSResult{NetnsCookie: 4, Client: lo, Server: loSrv, Outcome: Answered, Latency: time.Millisecond})
	got = a.Snapshot(t0.Add(time.Second))
	if len(got) != 2 || got[0].NetnsCookie != 4 || got[0].Answered != 1 || got[1].NetnsCookie != 9 || got[1].TimedOut != 2 {
		t.Errorf("loopback in two namespaces: %+v", got)
	}
}
