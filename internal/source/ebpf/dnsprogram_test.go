package ebpf

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/miekg/dns"
)

// TestDNSProgramAssembles checks that both programs marshal (Marshal rejects an invalid opcode) with every
// reference to a map or a label found.
func TestDNSProgramAssembles(t *testing.T) {
	for _, netns := range []bool{true, false} {
		spec := dnsCollectionSpec(netns)
		for _, name := range []string{"queries", "answers"} {
			insns := spec.Programs[name].Instructions
			if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
				t.Fatalf("%s (netns %v): %v", name, netns, err)
			}
			syms, err := insns.SymbolOffsets()
			if err != nil {
				t.Fatalf("%s (netns %v): %v", name, netns, err)
			}
			for _, ins := range insns {
				if ref := ins.Reference(); ref != "" && spec.Maps[ref] == nil {
					if _, ok := syms[ref]; !ok {
						t.Errorf("%s (netns %v): reference %q to nothing", name, netns, ref)
					}
				}
			}
		}
	}
	if be16(53) != int32(binary.NativeEndian.Uint16([]byte{0, 53})) {
		t.Errorf("be16(53) = %#x", be16(53))
	}
}

// loadDNS loads the DNS programs (recording the network namespace's cookie or not: netns) into the kernel
// without attaching them (safe on any host), or skips tb when this process cannot (not root, or
// SupportedDNS says why, or netns where the kernel's cgroup_skb programs cannot call bpf_get_netns_cookie).
func loadDNS(tb testing.TB, netns bool) *cebpf.Collection {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root (loads a BPF program)")
	}
	if err := SupportedDNS(); err != nil {
		tb.Skipf("the DNS tracer cannot run here: %v", err)
	}
	if netns && !netnsCookieSupported() {
		tb.Skip("the kernel's cgroup_skb programs cannot call bpf_get_netns_cookie")
	}
	coll, err := cebpf.NewCollection(dnsCollectionSpec(netns))
	if err != nil {
		var ve *cebpf.VerifierError
		if errors.As(err, &ve) {
			tb.Fatalf("the verifier rejects the DNS programs: %+v", ve)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { coll.Close() })
	return coll
}

// udpFrame returns an Ethernet frame with an IP (v4 or v6, as src) and UDP header from src to dst, and
// payload; ipOptions 4-byte words of IPv4 options (NOPs) lengthen the IPv4 header; proto replaces UDP.
func udpFrame(src, dst netip.AddrPort, payload []byte, ipOptions int, proto byte) []byte {
	be := binary.BigEndian
	udp := be.AppendUint16(nil, src.Port())
	udp = be.AppendUint16(udp, dst.Port())
	udp = be.AppendUint16(udp, uint16(udpHdr+len(payload)))
	udp = append(udp, 0, 0)
	udp = append(udp, payload...)
	frame := make([]byte, 12, 14+60+len(udp))
	var ip []byte
	if src.Addr().Is4() {
		frame = be.AppendUint16(frame, 0x0800)
		hl := ipv4MinHdr + 4*ipOptions
		ip = []byte{byte(0x40 | hl/4), 0}
		ip = be.AppendUint16(ip, uint16(hl+len(udp)))
		ip = append(ip, 0, 0, 0, 0, 64, proto, 0, 0)
		s, d := src.Addr().As4(), dst.Addr().As4()
		ip = append(append(ip, s[:]...), d[:]...)
		for range 4 * ipOptions {
			ip = append(ip, 1) // NOP
		}
	} else {
		frame = be.AppendUint16(frame, 0x86dd)
		ip = []byte{0x60, 0, 0, 0}
		ip = be.AppendUint16(ip, uint16(len(udp)))
		ip = append(ip, proto, 64)
		s, d := src.Addr().As16(), dst.Addr().As16()
		ip = append(append(ip, s[:]...), d[:]...)
	}
	return append(append(frame, ip...), udp...)
}

// dnsMsg packs a query (or, with rcode >= 0, an answer of that RCODE) for name and qtype.
func dnsMsg(tb testing.TB, id uint16, name string, qtype uint16, rcode int) []byte {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = id
	if rcode >= 0 {
		m.Response, m.Rcode = true, rcode
	}
	b, err := m.Pack()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestDNSProgramRun loads both programs and runs them (BPF_PROG_TEST_RUN: nothing is attached) on crafted
// packets: each must return 1 (allow), and leave in the ring buffer the record decodeDNS reads as the
// packet, or none for a packet that is not a DNS query (egress) or answer (ingress); the programs that
// record the network namespace, this process's (where the test run's socket is), the others 0.
func TestDNSProgramRun(t *testing.T) {
	t.Run("netns", func(t *testing.T) { testDNSProgramRun(t, true) })
	t.Run("no-netns", func(t *testing.T) { testDNSProgramRun(t, false) })
}

func testDNSProgramRun(t *testing.T, netns bool) {
	coll := loadDNS(t, netns)
	var ownNetns uint64
	if netns {
		var err error
		if ownNetns, err = NetnsCookie(); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	_, ownID := ownCgroup()

	client4, server4 := netip.MustParseAddrPort("10.0.0.2:40000"), netip.MustParseAddrPort("10.96.0.10:53")
	client6, server6 := netip.MustParseAddrPort("[fd00::2]:40001"), netip.MustParseAddrPort("[fd00::53]:53")
	query := dnsMsg(t, 0x1234, "host.example.", QTypeA, -1)
	nx := dnsMsg(t, 0xbeef, "nope.example.", QTypeA, dns.RcodeNameError)
	// A question's name in raw labels: n labels "a" and the root.
	rawQuery := func(n int, tail ...byte) []byte {
		b := []byte{0x43, 0x21, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0} // ID 0x4321, RD, QDCOUNT 1
		for range n {
			b = append(b, 1, 'a')
		}
		return append(b, tail...)
	}
	longest := rawQuery(127, 0, 0, 28, 0, 1) // 255 bytes of name, QTYPE AAAA
	tooLong := rawQuery(128, 0, 0, 28, 0, 1) // past dnsMaxLabels
	pointer := rawQuery(1, 0xc0, 12, 0, 1, 0, 1)
	noQuestion := append([]byte(nil), query...)
	noQuestion[5] = 0 // QDCOUNT 0
	cut := query[:dnsHdr+6]

	pk := func(dir DNSDirection, client, server netip.AddrPort, id, flags, qd, an, qtype uint16) *DNSPacket {
		return &DNSPacket{Dir: dir, Client: client, Server: server, ID: id, Flags: flags, QDCount: qd, ANCount: an, QType: qtype}
	}
	for _, tc := range []struct {
		name  string
		prog  string
		frame []byte
		want  *DNSPacket // nil: no record
	}{
		{"IPv4 query", "queries", udpFrame(client4, server4, query, 0, ipprotoUDP), pk(DNSQuery, client4, server4, 0x1234, 0x0100, 1, 0, QTypeA)},
		{"IPv4 query with options", "queries", udpFrame(client4, server4, query, 3, ipprotoUDP), pk(DNSQuery, client4, server4, 0x1234, 0x0100, 1, 0, QTypeA)},
		{"IPv6 query", "queries", udpFrame(client6, server6, dnsMsg(t, 7, "host.example.", QTypeAAAA, -1), 0, ipprotoUDP), pk(DNSQuery, client6, server6, 7, 0x0100, 1, 0, QTypeAAAA)},
		{"name of 127 labels", "queries", udpFrame(client4, server4, longest, 0, ipprotoUDP), pk(DNSQuery, client4, server4, 0x4321, 0x0100, 1, 0, QTypeAAAA)},
		{"name of 128 labels", "queries", udpFrame(client4, server4, tooLong, 0, ipprotoUDP), pk(DNSQuery, client4, server4, 0x4321, 0x0100, 1, 0, 0)},
		{"compression pointer", "queries", udpFrame(client4, server4, pointer, 0, ipprotoUDP), pk(DNSQuery, client4, server4, 0x4321, 0x0100, 1, 0, 0)},
		{"no question", "queries", udpFrame(client4, server4, noQuestion, 0, ipprotoUDP), pk(DNSQuery, client4, server4, 0x1234, 0x0100, 0, 0, 0)},
		{"name cut short", "queries", udpFrame(client4, server4, cut, 0, ipprotoUDP), pk(DNSQuery, client4, server4, 0x1234, 0x0100, 1, 0, 0)},
		{"IPv4 answer", "answers", udpFrame(server4, client4, nx, 0, ipprotoUDP), pk(DNSAnswer, client4, server4, 0xbeef, 0x8103, 1, 0, QTypeA)},
		{"IPv6 answer", "answers", udpFrame(server6, client6, dnsMsg(t, 9, "h.example.", QTypeAAAA, dns.RcodeServerFailure), 0, ipprotoUDP), pk(DNSAnswer, client6, server6, 9, 0x8102, 1, 0, QTypeAAAA)},
		{"answer going out (a server's)", "queries", udpFrame(server4, client4, nx, 0, ipprotoUDP), nil},
		{"query coming in (a server's)", "answers", udpFrame(client4, server4, query, 0, ipprotoUDP), nil},
		{"answer to port 53 going out", "queries", udpFrame(client4, server4, nx, 0, ipprotoUDP), nil},
		{"query from port 53 coming in", "answers", udpFrame(server4, client4, query, 0, ipprotoUDP), nil},
		{"another port", "queries", udpFrame(client4, netip.MustParseAddrPort("10.0.0.1:5353"), query, 0, ipprotoUDP), nil},
		{"TCP", "queries", udpFrame(client4, server4, query, 0, ipprotoTCP), nil},
		{"shorter than a DNS header", "queries", udpFrame(client4, server4, query[:dnsHdr-1], 0, ipprotoUDP), nil},
		{"IPv6 TCP", "queries", udpFrame(client6, server6, query, 0, ipprotoTCP), nil},
		{"not IP", "queries", append(make([]byte, 12), 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1), nil},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			before := monotonicNS()
			ret, err := coll.Programs[tc.prog].Run(&cebpf.RunOptions{Data: tc.frame})
			if err != nil {
				t.Fatal(err)
			}
			after := monotonicNS()
			if ret != 1 {
				t.Errorf("returned %d, want 1 (allow)", ret)
			}
			var recs [][]byte
			for {
				rd.SetDeadline(time.Now())
				rec, err := rd.Read()
				if err != nil {
					break
				}
				recs = append(recs, rec.RawSample)
			}
			if tc.want == nil {
				if len(recs) != 0 {
					t.Errorf("%d records, want none", len(recs))
				}
				return
			}
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			got, err := decodeDNS(recs[0])
			if err != nil {
				t.Fatal(err)
			}
			if got.TimeNS < before || got.TimeNS > after {
				t.Errorf("time %d not inside the run [%d, %d]", got.TimeNS, before, after)
			}
			if got.CgroupID == 0 || ownID != 0 && got.CgroupID != ownID {
				t.Errorf("cgroup id %d, this process's is %d", got.CgroupID, ownID)
			}
			if got.NetnsCookie != ownNetns {
				t.Errorf("network namespace cookie %d, want %d", got.NetnsCookie, ownNetns)
			}
			got.TimeNS, got.CgroupID, got.NetnsCookie = 0, 0, 0
			if got != *tc.want {
				t.Errorf("decoded %+v\nwant    %+v", got, *tc.want)
			}
		})
	}
}
