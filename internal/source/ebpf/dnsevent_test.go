package ebpf

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// encodeDNS is decodeDNS's inverse (the UDP length and checksum, NSCOUNT and ARCOUNT, which it does not
// read, are left zero).
func encodeDNS(p DNSPacket) []byte {
	b := make([]byte, dnsRecSize)
	ne, be := binary.NativeEndian, binary.BigEndian
	ne.PutUint64(b[dnsRecTime:], p.TimeNS)
	ne.PutUint64(b[dnsRecCgroup:], p.CgroupID)
	ne.PutUint64(b[dnsRecNetns:], p.NetnsCookie)
	b[dnsRecDir] = byte(p.Dir)
	be.PutUint16(b[dnsRecQType:], p.QType)
	src, dst := p.Client, p.Server
	if p.Dir == DNSAnswer {
		src, dst = dst, src
	}
	if src.Addr().Is4() {
		b[dnsRecVersion] = 4
		s, d := src.Addr().As4(), dst.Addr().As4()
		copy(b[dnsRecSaddr:], s[:])
		copy(b[dnsRecDaddr:], d[:])
	} else {
		b[dnsRecVersion] = 6
		s, d := src.Addr().As16(), dst.Addr().As16()
		copy(b[dnsRecSaddr:], s[:])
		copy(b[dnsRecDaddr:], d[:])
	}
	be.PutUint16(b[dnsRecUDP:], src.Port())
	be.PutUint16(b[dnsRecUDP+2:], dst.Port())
	be.PutUint16(b[dnsRecDNS:], p.ID)
	be.PutUint16(b[dnsRecDNS+2:], p.Flags)
	be.PutUint16(b[dnsRecDNS+4:], p.QDCount)
	be.PutUint16(b[dnsRecDNS+6:], p.ANCount)
	return b
}

func TestDecodeDNS(t *testing.T) {
	// A record as the program writes it, byte by byte (the time and cgroup little-endian, as on amd64 and
	// arm64; the packet's fields in network order).
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		b := make([]byte, dnsRecSize)
		copy(b[0:], []byte{0x40, 0x42, 0x0f, 0, 0, 0, 0, 0})           // time 1,000,000
		copy(b[8:], []byte{0x39, 0x30, 0, 0, 0, 0, 0, 0})              // cgroup 12345
		copy(b[16:], []byte{4, dirAnswer, 0, 28})                      // IPv4, answer, QTYPE AAAA
		copy(b[20:], []byte{0, 53, 0x9c, 0x40, 0, 40, 0xab, 0xcd})     // UDP 53 -> 40000, length 40, checksum
		copy(b[28:], []byte{0x12, 0x34, 0x81, 0x83, 0, 1, 0, 0, 0, 1}) // ID 0x1234, QR RD RA NXDOMAIN, 1 question, 0 answers, 1 authority
		copy(b[40:], []byte{10, 96, 0, 10})                            // source 10.96.0.10
		copy(b[56:], []byte{10, 0, 0, 7})                              // destination 10.0.0.7
		copy(b[72:], []byte{0x01, 0x10, 0, 0, 0, 0, 0, 0})             // network namespace 4097
		p, err := decodeDNS(b)
		if err != nil {
			t.Fatal(err)
		}
		want := DNSPacket{TimeNS: 1e6, Dir: DNSAnswer, CgroupID: 12345, NetnsCookie: 4097, Client: netip.MustParseAddrPort("10.0.0.7:40000"),
			Server: netip.MustParseAddrPort("10.96.0.10:53"), ID: 0x1234, Flags: 0x8183, QDCount: 1, QType: QTypeAAAA}
		if p != want {
			t.Errorf("decoded %+v\nwant %+v", p, want)
		}
		if p.RCode() != RCodeNXDomain || p.Truncated() {
			t.Errorf("RCode %d, Truncated %v", p.RCode(), p.Truncated())
		}
	}

	for _, p := range []DNSPacket{
		{TimeNS: 5, Dir: DNSQuery, CgroupID: 9, NetnsCookie: 1 << 40, Client: netip.MustParseAddrPort("[fd00::1]:40000"),
			Server: netip.MustParseAddrPort("[fd00::53]:53"), ID: 65535, Flags: 0x0100, QDCount: 1, QType: QTypeA},
		{Dir: DNSAnswer, Client: netip.MustParseAddrPort("127.0.0.1:1"), Server: netip.MustParseAddrPort("127.0.0.53:53"),
			Flags: 0x8380, ANCount: 3}, // TC
		// An IPv4-mapped address in an IPv6 record stays as it is (the kernel sends a dual-stack socket's
		// IPv4 traffic as IPv4 packets).
		{Dir: DNSQuery, Client: netip.MustParseAddrPort("[::ffff:10.0.0.1]:3"), Server: netip.MustParseAddrPort("[::ffff:10.0.0.2]:53")},
	} {
		got, err := decodeDNS(encodeDNS(p))
		if err != nil {
			t.Fatal(err)
		}
		if got != p {
			t.Errorf("round trip %+v\ngave %+v", p, got)
		}
	}
	if p, _ := decodeDNS(encodeDNS(DNSPacket{Dir: DNSAnswer, Flags: 0x8202, Client: netip.MustParseAddrPort("1.2.3.4:5"), Server: netip.MustParseAddrPort("1.2.3.5:53")})); !p.Truncated() || p.RCode() != RCodeServFail {
		t.Errorf("TC and SERVFAIL: %+v", p)
	}

	ok := encodeDNS(DNSPacket{Dir: DNSQuery, Client: netip.MustParseAddrPort("127.0.0.1:1"), Server: netip.MustParseAddrPort("127.0.0.1:53")})
	set := func(off int, v byte) []byte {
		b := append([]byte(nil), ok...)
		b[off] = v
		return b
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"short":        {ok[:dnsRecSize-1], "79 bytes"},
		"version":      {set(dnsRecVersion, 5), "IP version 5"},
		"direction":    {set(dnsRecDir, 3), "direction 3"},
		"query QR":     {set(dnsRecDNS+2, 0x80), "query record with QR set"},
		"answer no QR": {set(dnsRecDir, dirAnswer), "answer record with QR clear"},
	} {
		if _, err := decodeDNS(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}

func TestDNSStrings(t *testing.T) {
	for got, want := range map[string]string{
		DNSQuery.String(): "query", DNSAnswer.String(): "answer", DNSDirection(0).String(): "DNSDirection(0)",
		Answered.String(): "answered", TimedOut.String(): "timed out", DNSOutcome(7).String(): "DNSOutcome(7)",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}
