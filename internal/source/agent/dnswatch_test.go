package agent

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/ebpf"
)

// TestDNSReportJSON: the tracer's stats by client and server become the report's clients, with their cgroup
// ids sorted, latencies in seconds, and the JSON the measurement decodes.
func TestDNSReportJSON(t *testing.T) {
	pod := ebpf.DNSKey{Client: netip.MustParseAddr("10.244.1.5"), Server: netip.MustParseAddrPort("10.96.0.10:53")}
	host := ebpf.DNSKey{Client: netip.MustParseAddr("192.168.0.2"), Server: netip.MustParseAddrPort("10.96.0.10:53")}
	stats := []ebpf.DNSStats{
		{DNSKey: pod, Queries: 40, Answered: 38, TimedOut: 2, Retransmits: 1, PerSecond: 20, P50: time.Millisecond, P99: 3 * time.Millisecond,
			Max: 4 * time.Millisecond, NoError: 36, NoData: 18, NXDomain: 2, A: 20, AAAA: 20},
		{DNSKey: host, Queries: 1, Answered: 1, PerSecond: 0.5, NoError: 1, A: 1},
	}
	rep := NewDNSReport(stats, map[ebpf.DNSKey][]uint64{pod: {9, 3}, host: {42}}, 2*time.Second, time.Second)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window_seconds":2`, `"timeout_seconds":1`, `"client":"10.244.1.5","server":"10.96.0.10:53","cgroup_ids":[3,9]`,
		`"queries":40,"answered":38,"timeouts":2,"retransmits":1,"per_second":20`, `"nodata":18,"nxdomain":2`, `"a":20,"aaaa":20`,
		`"p50_seconds":0.001,"p99_seconds":0.003,"max_seconds":0.004`, `"client":"192.168.0.2"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
	if strings.Contains(string(b), `"pod"`) {
		t.Errorf("the agent names no pod: %s", b)
	}
	var back DNSReport
	if err := json.Unmarshal(b, &back); err != nil || len(back.Clients) != 2 || back.Clients[0].TimedOut != 2 || back.Clients[1].CgroupIDs[0] != 42 {
		t.Errorf("round trip: %+v %v", back, err)
	}
	if e := NewDNSReport(nil, nil, time.Second, time.Second); e.Clients == nil {
		t.Error("no clients must encode as [], not null")
	}
}

// TestNodeHostDNSUnsupported: where the host's cgroup v2 root cannot be found (a fixture without pid 1's
// mountinfo) the DNS watch is an unread entry with the reason, and the rest is read.
func TestNodeHostDNSUnsupported(t *testing.T) {
	r := "testdata/hosts/healthy"
	h := ReadNodeHost(t.Context(), NodeHostOptions{Proc: t.TempDir(), NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root", Window: 10 * time.Millisecond, DNS: true})
	if h.DNS != nil {
		t.Fatalf("DNS read: %+v", h.DNS)
	}
	found := false
	for _, u := range h.Unread {
		found = found || strings.HasPrefix(u, DNSUnread+": ") && strings.Contains(u, "cannot read the host's mounts")
	}
	if !found {
		t.Errorf("unread %q", h.Unread)
	}
}

// TestDNSNetnsKey: only a loopback client gets a network namespace key, and only whether it is the agent's:
// those of every other namespace are counted together and reported with other_netns; without the
// namespaces (a kernel whose programs cannot read them) every result is the node's as before.
func TestDNSNetnsKey(t *testing.T) {
	res := func(client string, netns uint64) ebpf.DNSResult {
		return ebpf.DNSResult{Client: netip.MustParseAddrPort(client), Server: netip.MustParseAddrPort("127.0.0.1:53"), NetnsCookie: netns}
	}
	w := &dnsWatch{netns: true, own: 7}
	for _, tc := range []struct {
		r    ebpf.DNSResult
		want uint64
	}{
		{res("127.0.0.1:4000", 7), 0},
		{res("127.0.0.1:4000", 9), otherNetnsKey},
		{res("127.0.0.53:4000", 11), otherNetnsKey},
		{res("[::1]:4000", 9), otherNetnsKey},
		{res("[::ffff:127.0.0.1]:4000", 9), otherNetnsKey},
		{res("10.244.1.5:4000", 9), 0}, // a pod's own address: its namespace says nothing more
		{res("192.168.0.2:4000", 7), 0},
	} {
		if got := w.netnsKey(tc.r); got != tc.want {
			t.Errorf("%s in %d: key %d, want %d", tc.r.Client, tc.r.NetnsCookie, got, tc.want)
		}
	}
	if got := (&dnsWatch{}).netnsKey(res("127.0.0.1:4000", 9)); got != 0 {
		t.Errorf("without namespaces: key %d", got)
	}

	lo := netip.MustParseAddr("127.0.0.1")
	srv := netip.MustParseAddrPort("127.0.0.1:53")
	own, other := ebpf.DNSKey{Client: lo, Server: srv}, ebpf.DNSKey{Client: lo, Server: srv, NetnsCookie: otherNetnsKey}
	rep := NewDNSReport([]ebpf.DNSStats{{DNSKey: own, Queries: 3, Answered: 3}, {DNSKey: other, Queries: 2, TimedOut: 2}}, nil, 6*time.Second, 5*time.Second)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back DNSReport
	if err := json.Unmarshal(b, &back); err != nil || len(back.Clients) != 2 || back.Clients[0].OtherNetns || !back.Clients[1].OtherNetns || back.Clients[1].TimedOut != 2 {
		t.Errorf("round trip: %s -> %+v %v", b, back, err)
	}
	if strings.Count(string(b), `"other_netns":true`) != 1 {
		t.Errorf("other_netns once: %s", b)
	}
}
