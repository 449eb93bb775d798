package ebpf

import (
	"net/netip"
	"os"
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary bytes to the two parsers of what the kernel hands over: a tracepoint's format
// file and a ring buffer record. Neither may panic; a decoded event re-encodes to the same event.
func FuzzDecode(f *testing.F) {
	if text, err := os.ReadFile("testdata/inet_sock_set_state.format"); err == nil {
		f.Add(text)
	}
	f.Add(make([]byte, evSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if fields, err := parseFormat(string(b)); err == nil {
			_, _ = layoutFor(fields)
		}
		ev, err := decodeEvent(b)
		if err != nil {
			return
		}
		if again, err := decodeEvent(encodeEvent(ev)); err != nil || again != ev {
			t.Errorf("%+v re-encoded decodes as %+v (%v)", ev, again, err)
		}
	})
}

// FuzzDecodeDNS feeds arbitrary bytes to the DNS record decoder, and what it decodes to the pairing: neither
// may panic; a decoded packet re-encodes to the same packet.
func FuzzDecodeDNS(f *testing.F) {
	f.Add(make([]byte, dnsRecSize))
	f.Add(encodeDNS(DNSPacket{TimeNS: 1, Dir: DNSQuery, CgroupID: 2, Client: netip.MustParseAddrPort("10.0.0.2:40000"),
		Server: netip.MustParseAddrPort("10.96.0.10:53"), ID: 7, Flags: 0x0100, QDCount: 1, QType: QTypeA}))
	f.Add(encodeDNS(DNSPacket{TimeNS: 3, Dir: DNSAnswer, CgroupID: 2, Client: netip.MustParseAddrPort("[fd00::2]:40000"),
		Server: netip.MustParseAddrPort("[fd00::53]:53"), ID: 7, Flags: 0x8183, QDCount: 1, QType: QTypeAAAA}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeDNS(b)
		if err != nil {
			return
		}
		if again, err := decodeDNS(encodeDNS(p)); err != nil || again != p {
			t.Errorf("%+v re-encoded decodes as %+v (%v)", p, again, err)
		}
		pr := newDNSPairer(time.Second)
		pr.add(p, func(DNSResult) {})
		later := p.TimeNS + uint64(time.Second)
		pr.expire(later, func(DNSResult) {})
		if pr.n != 0 && later > p.TimeNS { // a time that wraps is earlier: nothing expires then
			t.Errorf("%d pending after the timeout", pr.n)
		}
	})
}
