package ebpf

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// DNSDirection says which of the two programs saw a DNS packet.
type DNSDirection uint8

const (
	// DNSQuery is a query going out of a socket (egress, to port 53, QR clear).
	DNSQuery DNSDirection = dirQuery
	// DNSAnswer is an answer coming into a socket (ingress, from port 53, QR set).
	DNSAnswer DNSDirection = dirAnswer
)

func (d DNSDirection) String() string {
	return enumName(d, "DNSDirection", map[DNSDirection]string{DNSQuery: "query", DNSAnswer: "answer"})
}

// The RCODEs the DNS aggregator tells apart (RFC 1035 4.1.1), and the QTYPEs.
const (
	RCodeNoError  = 0
	RCodeServFail = 2
	RCodeNXDomain = 3
	QTypeA        = 1
	QTypeAAAA     = 28
)

// DNSPacket is one DNS query or answer as a socket's cgroup_skb program saw it.
type DNSPacket struct {
	// TimeNS is the monotonic time (CLOCK_MONOTONIC, bpf_ktime_get_ns) at the hook: a query's in the
	// sending task's sendmsg, before the packet leaves; an answer's as it is queued to the socket, before
	// the application's recvmsg returns it.
	TimeNS uint64
	Dir    DNSDirection
	// CgroupID is the cgroup v2 id of the socket (the cgroup of the task that created it; the inode number
	// of its cgroup directory).
	CgroupID uint64
	// NetnsCookie is the socket's network namespace (bpf_get_netns_cookie; NetnsCookie gives a namespace's):
	// what tells loopback addresses, the same in every namespace, apart. 0 where the kernel cannot tell
	// (DNSTracer.Netns).
	NetnsCookie uint64
	// Client is the socket's end, Server port 53's (the query's destination, the answer's source).
	Client, Server netip.AddrPort
	// ID is the DNS header's ID; Flags its second 16 bits (QR, opcode, AA, TC, RD, RA, Z, AD, CD, RCODE).
	ID, Flags uint16
	// QDCount and ANCount are the header's question and answer counts.
	QDCount, ANCount uint16
	// QType is the first question's QTYPE (QTypeA, QTypeAAAA, ...), 0 when the program could not read it
	// (no question, a name it could not walk).
	QType uint16
}

// RCode is the answer's RCODE: the low 4 bits of the flags (extended RCODEs in an OPT record are not read).
func (p DNSPacket) RCode() uint8 { return uint8(p.Flags & 0xf) }

// Truncated says the TC bit is set: the answer did not fit, and the client retries over TCP (not traced).
func (p DNSPacket) Truncated() bool { return p.Flags&0x0200 != 0 }

// decodeDNS reads one DNS ring buffer record (the layout of the dnsRec* constants: the time and cgroup id in
// the host's order, binary.NativeEndian; the packet's fields in network order).
func decodeDNS(b []byte) (DNSPacket, error) {
	if len(b) < dnsRecSize {
		return DNSPacket{}, fmt.Errorf("DNS record of %d bytes, want %d", len(b), dnsRecSize)
	}
	ne, be := binary.NativeEndian, binary.BigEndian
	p := DNSPacket{
		TimeNS:      ne.Uint64(b[dnsRecTime:]),
		CgroupID:    ne.Uint64(b[dnsRecCgroup:]),
		NetnsCookie: ne.Uint64(b[dnsRecNetns:]),
		Dir:         DNSDirection(b[dnsRecDir]),
		QType:       be.Uint16(b[dnsRecQType:]),
		ID:          be.Uint16(b[dnsRecDNS:]),
		Flags:       be.Uint16(b[dnsRecDNS+2:]),
		QDCount:     be.Uint16(b[dnsRecDNS+4:]),
		ANCount:     be.Uint16(b[dnsRecDNS+6:]),
	}
	var saddr, daddr netip.Addr
	switch v := b[dnsRecVersion]; v {
	case 4:
		saddr = netip.AddrFrom4([4]byte(b[dnsRecSaddr : dnsRecSaddr+4]))
		daddr = netip.AddrFrom4([4]byte(b[dnsRecDaddr : dnsRecDaddr+4]))
	case 6:
		saddr = netip.AddrFrom16([16]byte(b[dnsRecSaddr : dnsRecSaddr+16]))
		daddr = netip.AddrFrom16([16]byte(b[dnsRecDaddr : dnsRecDaddr+16]))
	default:
		return DNSPacket{}, fmt.Errorf("DNS record of IP version %d", v)
	}
	src := netip.AddrPortFrom(saddr, be.Uint16(b[dnsRecUDP:]))
	dst := netip.AddrPortFrom(daddr, be.Uint16(b[dnsRecUDP+2:]))
	qr := p.Flags&(dnsQR<<8) != 0
	switch p.Dir {
	case DNSQuery:
		if qr {
			return DNSPacket{}, fmt.Errorf("DNS query record with QR set")
		}
		p.Client, p.Server = src, dst
	case DNSAnswer:
		if !qr {
			return DNSPacket{}, fmt.Errorf("DNS answer record with QR clear")
		}
		p.Client, p.Server = dst, src
	default:
		return DNSPacket{}, fmt.Errorf("DNS record of direction %d", p.Dir)
	}
	return p, nil
}

// DNSOutcome is how a query ended: answered, or unanswered for the tracer's timeout.
type DNSOutcome uint8

const (
	Answered DNSOutcome = iota + 1
	TimedOut
)

func (o DNSOutcome) String() string {
	return enumName(o, "DNSOutcome", map[DNSOutcome]string{Answered: "answered", TimedOut: "timed out"})
}

// DNSResult is one DNS query as the application saw it: its first transmission paired with its answer by
// (cgroup, network namespace, client address:port, server address:port, DNS ID), or its timeout.
type DNSResult struct {
	CgroupID uint64
	// NetnsCookie is the query's socket's network namespace (DNSPacket.NetnsCookie).
	NetnsCookie    uint64
	Client, Server netip.AddrPort
	ID             uint16
	// QType is the query's first QTYPE (0: not read).
	QType uint16
	// SentNS is the monotonic time of the query's first transmission.
	SentNS uint64
	// Retransmits counts the queries with the same key after the first, before the answer or the timeout
	// (a resolver's retry on the same socket with the same ID).
	Retransmits int
	Outcome     DNSOutcome
	// Latency is the answer's time less the first transmission's (the application's wait, retransmissions
	// included); 0 for a timeout.
	Latency time.Duration
	// RCode, ANCount and Truncated are the answer's (zero for a timeout).
	RCode     uint8
	ANCount   uint16
	Truncated bool
}
