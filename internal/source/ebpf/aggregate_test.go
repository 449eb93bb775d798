package ebpf

import (
	"net/netip"
	"testing"
	"time"
)

func TestAggregator(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := NewAggregator(t0)
	web, dns := netip.MustParseAddrPort("10.0.0.1:80"), netip.MustParseAddrPort("10.96.0.10:53")
	// cgroup 5 -> web: 100 connects of 1..100 ms, 4 failures (whose time is not a latency).
	for i := 1; i <= 100; i++ {
		a.Add(ConnectEvent{CgroupID: 5, Dest: web, Latency: time.Duration(i) * time.Millisecond, Outcome: Established})
	}
	for range 4 {
		a.Add(ConnectEvent{CgroupID: 5, Dest: web, Latency: time.Hour, Outcome: Failed})
	}
	// cgroup 5 -> dns and cgroup 3 -> web: one each.
	a.Add(ConnectEvent{CgroupID: 5, Dest: dns, Latency: 250 * time.Microsecond, Outcome: Established})
	a.Add(ConnectEvent{CgroupID: 5, Dest: dns, Latency: 20 * time.Minute, Outcome: Established}) // past the top: 10m
	a.Add(ConnectEvent{CgroupID: 3, Dest: web, Latency: 0, Outcome: Established})
	// cgroup 3 -> dns: failures only.
	a.Add(ConnectEvent{CgroupID: 3, Dest: dns, Latency: time.Second, Outcome: Failed})

	got := a.Snapshot(t0.Add(2 * time.Second))
	if len(got) != 4 {
		t.Fatalf("%d keys: %+v", len(got), got)
	}
	order := []Key{{CgroupID: 3, Dest: web}, {CgroupID: 3, Dest: dns}, {CgroupID: 5, Dest: web}, {CgroupID: 5, Dest: dns}}
	for i, k := range order {
		if got[i].Key != k {
			t.Errorf("key %d: %+v, want %+v", i, got[i].Key, k)
		}
	}
	near := func(d, want time.Duration) bool { return d >= want*99/100 && d <= want*101/100 }
	s := got[2]
	if s.Connects != 104 || s.Failures != 4 || s.PerSecond != 52 {
		t.Errorf("5->web counts: %+v", s)
	}
	if !near(s.P50, 50*time.Millisecond) || !near(s.P99, 99*time.Millisecond) || !near(s.Max, 100*time.Millisecond) {
		t.Errorf("5->web latencies: %+v", s)
	}
	if s.Slow != 0 {
		t.Errorf("5->web: %d slow connects, all under 1 s", s.Slow)
	}
	// Slow: established at the initial RTO (1 s) or later; a failure after 1 s (3->dns) is not a slow connect.
	if s := got[3]; s.Connects != 2 || s.Failures != 0 || s.Slow != 1 || !near(s.P50, 250*time.Microsecond) || !near(s.Max, 10*time.Minute) {
		t.Errorf("5->dns: %+v", s)
	}
	if s := got[0]; s.Connects != 1 || s.P50 != 1 { // below the histogram's floor: 1ns
		t.Errorf("3->web: %+v", s)
	}
	if s := got[1]; s.Connects != 1 || s.Failures != 1 || s.Slow != 0 || s.P50 != 0 || s.Max != 0 {
		t.Errorf("3->dns (failures only): %+v", s)
	}
	if s := a.Snapshot(t0); s[0].PerSecond != 0 {
		t.Errorf("empty window: %+v", s[0])
	}

	a.Reset(t0.Add(time.Minute))
	if s := a.Snapshot(t0.Add(2 * time.Minute)); len(s) != 0 {
		t.Errorf("after Reset: %+v", s)
	}
}

// TestClientAggregator: by source address (a pod's IP; the port and the cgroup left out) and destination.
func TestClientAggregator(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := NewClientAggregator(t0)
	web := netip.MustParseAddrPort("10.0.0.1:80")
	pod, node := netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("::ffff:198.19.0.2")
	for i := range 10 {
		a.Add(ConnectEvent{CgroupID: uint64(i), Source: netip.AddrPortFrom(pod, uint16(40000+i)), Dest: web, Latency: 10 * time.Millisecond, Outcome: Established})
	}
	a.Add(ConnectEvent{CgroupID: 1, Source: netip.AddrPortFrom(node, 50000), Dest: web, Latency: time.Second, Outcome: Failed})
	got := a.Snapshot(t0.Add(time.Second))
	if len(got) != 2 {
		t.Fatalf("%d keys, want 2 (one per source address): %+v", len(got), got)
	}
	if k := got[0].Key; k.Client != pod || k.Dest != web || k.CgroupID != 0 || got[0].Connects != 10 || got[0].PerSecond != 10 {
		t.Errorf("the pod's: %+v", got[0])
	}
	if k := got[1].Key; k.Client != node.Unmap() || got[1].Failures != 1 {
		t.Errorf("the node's (an IPv4-mapped source unmapped): %+v", got[1])
	}
}
