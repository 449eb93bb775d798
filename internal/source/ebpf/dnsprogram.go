package ebpf

import (
	"encoding/binary"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// dnsPort is the port the DNS programs watch: a query goes out to it, an answer comes in from it.
const dnsPort = 53

// The IP, UDP and DNS numbers the DNS programs use.
const (
	ipprotoUDP = 17
	ipv4MinHdr = 20 // the IPv4 header without options; its IHL counts 4-byte words
	ipv6Hdr    = 40 // the fixed IPv6 header (extension headers are not followed)
	udpHdr     = 8
	dnsHdr     = 12
	dnsQR      = 0x80 // QR in the flags' first byte: set in an answer
)

// dnsMaxLabels bounds the walk over the first question's QNAME: a name of at most 255 bytes has at most 127
// labels before the root's empty one.
const dnsMaxLabels = 128

// Directions in the DNS record: which program saw the packet.
const (
	dirQuery  = 1 // egress, to port 53, QR clear
	dirAnswer = 2 // ingress, from port 53, QR set
)

// The ring buffer's record (DNSPacket's wire form; decodeDNS reads it). The UDP and DNS headers and QTYPE
// are copied as the packet has them, in network order: the program only compares bytes, Go converts.
const (
	dnsRecTime    = 0  // u64 bpf_ktime_get_ns at the hook
	dnsRecCgroup  = 8  // u64 bpf_skb_cgroup_id: the socket's cgroup v2 id
	dnsRecVersion = 16 // u8: 4 or 6
	dnsRecDir     = 17 // u8: dirQuery or dirAnswer
	dnsRecQType   = 18 // be16: the first question's QTYPE, 0 when not read
	dnsRecUDP     = 20 // [8]byte UDP header: source port, destination port, length, checksum
	dnsRecDNS     = 28 // [12]byte DNS header: ID, flags, QDCOUNT, ANCOUNT, NSCOUNT, ARCOUNT
	dnsRecSaddr   = 40 // [16]byte the packet's source address: IPv4 in the first 4, then zeros
	dnsRecDaddr   = 56 // [16]byte its destination
	dnsRecNetns   = 72 // u64 bpf_get_netns_cookie: the socket's network namespace, 0 where the kernel cannot tell
	dnsRecSize    = 80
)

// Stack slots of the DNS program (offsets from R10, the frame pointer; stack accesses must be aligned).
const (
	dnsFpIP   = -24                  // the first 20 bytes of the IP header (24 reserved)
	dnsFpRec  = dnsFpIP - dnsRecSize // the record being built
	dnsFpByte = dnsFpRec - 8         // one QNAME length byte
)

// be16 is what a 16-bit load of v in network order reads on this host: what the program compares packet
// bytes with, so that it needs no byte swap.
func be16(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

// dnsProgram returns the cgroup_skb program for one direction. Egress keeps UDP packets to port 53 whose QR
// bit is clear (queries going out), ingress UDP packets from port 53 whose QR bit is set (answers coming
// in): a DNS server's own traffic in the cgroup (queries in, answers out) is not kept. For each kept packet
// it sends a dnsRecSize record through the ring buffer "events": the time, the socket's cgroup id, the IP
// version, the addresses, the UDP and DNS headers, the first question's QTYPE and, with netns (a kernel whose
// cgroup_skb programs can call bpf_get_netns_cookie: netnsCookieSupported), the socket's network namespace
// cookie (else 0). It returns 1 (allow) on every path: it observes, it never drops.
//
// The packet is read with bpf_skb_load_bytes (the skb's data starts at the network header in a cgroup_skb
// program, for both directions), which checks each read against the packet's length at run time, so an
// offset taken from the packet (IHL, the QNAME's label lengths) needs no proof of bounds for the verifier.
func dnsProgram(egress, netns bool) asm.Instructions {
	const (
		ctx = asm.R6
		off = asm.R7 // the UDP header's offset, then the QNAME walk's
		n   = asm.R8 // labels walked
	)
	portAt, dir, qr := int16(dnsFpRec+dnsRecUDP+2), int32(dirQuery), asm.JNE // destination port; QR must be clear
	if !egress {
		portAt, dir, qr = dnsFpRec+dnsRecUDP, dirAnswer, asm.JEq // source port; QR must be set
	}
	// load reads length bytes of the packet at offset (the instructions that set R2) to the stack at dst;
	// the helper's return is in R0 (0, or negative past the packet's end).
	load := func(offset asm.Instructions, dst int16, length int32) asm.Instructions {
		is := asm.Instructions{asm.Mov.Reg(asm.R1, ctx)}
		is = append(is, offset...)
		return append(is,
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, int32(dst)),
			asm.Mov.Imm(asm.R4, length),
			asm.FnSkbLoadBytes.Call(),
		)
	}
	at := func(v int32) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R2, v)} }
	atOff := func(add int32) asm.Instructions {
		if add == 0 {
			return asm.Instructions{asm.Mov.Reg(asm.R2, off)}
		}
		return asm.Instructions{asm.Mov.Reg(asm.R2, off), asm.Add.Imm(asm.R2, add)}
	}
	var insns asm.Instructions
	add := func(is ...asm.Instruction) { insns = append(insns, is...) }
	add(asm.Mov.Reg(ctx, asm.R1))
	add(load(at(0), dnsFpIP, ipv4MinHdr)...) // every DNS packet is longer
	add(
		asm.JNE.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R1, asm.RFP, dnsFpIP, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 4),
		asm.JEq.Imm(asm.R2, 6, "ip6"),
		asm.JNE.Imm(asm.R2, 4, "exit"),
		// IPv4 (a dual-stack socket's IPv4 traffic too): UDP, after IHL words of header.
		asm.LoadMem(asm.R2, asm.RFP, dnsFpIP+9, asm.Byte),
		asm.JNE.Imm(asm.R2, ipprotoUDP, "exit"),
		asm.And.Imm(asm.R1, 0xf),
		asm.LSh.Imm(asm.R1, 2),
		asm.JLT.Imm(asm.R1, ipv4MinHdr, "exit"),
		asm.Mov.Reg(off, asm.R1),
		asm.Ja.Label("udp"),
		// IPv6: UDP as the next header of the fixed one.
		asm.LoadMem(asm.R2, asm.RFP, dnsFpIP+6, asm.Byte).WithSymbol("ip6"),
		asm.JNE.Imm(asm.R2, ipprotoUDP, "exit"),
		asm.Mov.Imm(off, ipv6Hdr),
	)
	// The UDP and DNS headers, straight into the record; then the port and QR of this direction.
	udp := load(atOff(0), dnsFpRec+dnsRecUDP, udpHdr+dnsHdr)
	udp[0] = udp[0].WithSymbol("udp")
	add(udp...)
	add(
		asm.JNE.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R1, asm.RFP, portAt, asm.Half),
		asm.JNE.Imm(asm.R1, be16(dnsPort), "exit"),
		asm.LoadMem(asm.R1, asm.RFP, dnsFpRec+dnsRecDNS+2, asm.Byte),
		asm.And.Imm(asm.R1, dnsQR),
		qr.Imm(asm.R1, 0, "exit"),

		// A DNS packet of this direction: the rest of the record.
		asm.StoreImm(asm.RFP, dnsFpRec+dnsRecDir, int64(dir), asm.Byte),
		asm.StoreImm(asm.RFP, dnsFpRec+dnsRecQType, 0, asm.Half),
		asm.LoadMem(asm.R1, asm.RFP, dnsFpIP, asm.Byte),
		asm.RSh.Imm(asm.R1, 4),
		asm.StoreMem(asm.RFP, dnsFpRec+dnsRecVersion, asm.R1, asm.Byte),
		asm.JEq.Imm(asm.R1, 6, "addr6"),
		asm.LoadMem(asm.R1, asm.RFP, dnsFpIP+12, asm.Word),
		asm.StoreMem(asm.RFP, dnsFpRec+dnsRecSaddr, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, dnsFpIP+16, asm.Word),
		asm.StoreMem(asm.RFP, dnsFpRec+dnsRecDaddr, asm.R1, asm.Word),
	)
	for _, at := range []int16{dnsRecSaddr, dnsRecDaddr} {
		for i := int16(4); i < 16; i += 4 {
			add(asm.StoreImm(asm.RFP, dnsFpRec+at+i, 0, asm.Word))
		}
	}
	add(asm.Ja.Label("stamp"))
	addr6 := load(at(8), dnsFpRec+dnsRecSaddr, 32) // IPv6: source and destination, 16 bytes each, at 8
	addr6[0] = addr6[0].WithSymbol("addr6")
	add(addr6...)
	add(
		asm.JNE.Imm(asm.R0, 0, "exit"),
		asm.FnKtimeGetNs.Call().WithSymbol("stamp"),
		asm.StoreMem(asm.RFP, dnsFpRec+dnsRecTime, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, ctx),
		asm.FnSkbCgroupId.Call(),
		asm.StoreMem(asm.RFP, dnsFpRec+dnsRecCgroup, asm.R0, asm.DWord),
	)
	if netns {
		add(asm.Mov.Reg(asm.R1, ctx), asm.FnGetNetnsCookie.Call()) // the socket's network namespace
	} else {
		add(asm.Mov.Imm(asm.R0, 0))
	}
	add(
		asm.StoreMem(asm.RFP, dnsFpRec+dnsRecNetns, asm.R0, asm.DWord),

		// QTYPE follows the first question's QNAME: labels of one length byte (at most 63) and as many bytes,
		// ending in the empty label. A length with either top bit set (a compression pointer, which a
		// question does not use, or a reserved type) or a walk past dnsMaxLabels leaves QTYPE 0.
		asm.LoadMem(asm.R1, asm.RFP, dnsFpRec+dnsRecDNS+4, asm.Half), // QDCOUNT
		asm.JEq.Imm(asm.R1, 0, "emit"),
		asm.Add.Imm(off, udpHdr+dnsHdr),
		asm.Mov.Imm(n, 0),
	)
	label := load(atOff(0), dnsFpByte, 1)
	label[0] = label[0].WithSymbol("label")
	add(label...)
	add(
		asm.JNE.Imm(asm.R0, 0, "emit"), // the packet ends inside the name
		asm.LoadMem(asm.R1, asm.RFP, dnsFpByte, asm.Byte),
		asm.JEq.Imm(asm.R1, 0, "qtype"),
		asm.JSet.Imm(asm.R1, 0xc0, "emit"),
		asm.Add.Reg(off, asm.R1),
		asm.Add.Imm(off, 1),
		asm.Add.Imm(n, 1),
		asm.JLT.Imm(n, dnsMaxLabels, "label"),
		asm.Ja.Label("emit"),
	)
	qtype := load(atOff(1), dnsFpRec+dnsRecQType, 2) // on failure the helper zeroes it: not read
	qtype[0] = qtype[0].WithSymbol("qtype")
	add(qtype...)
	add(
		// Batched wake-ups: user space is woken only once the ring is dnsWakeAt full, and otherwise reads
		// on its poll (dnsPoll): with a wake-up per record, BenchmarkDNSQueriesTraced's queries were 11-45%
		// slower traced, against ~0.35 µs of the two programs' own time.
		asm.LoadMapPtr(asm.R1, 0).WithReference("events").WithSymbol("emit"),
		asm.Mov.Imm(asm.R2, bpfRBAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R4, bpfRBNoWakeup),
		asm.JLT.Imm(asm.R0, dnsWakeAt, "output"),
		asm.Mov.Imm(asm.R4, bpfRBForceWakeup),
		asm.LoadMapPtr(asm.R1, 0).WithReference("events").WithSymbol("output"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, dnsFpRec),
		asm.Mov.Imm(asm.R3, dnsRecSize),
		asm.FnRingbufOutput.Call(), // the ring is full: the packet is lost

		asm.Mov.Imm(asm.R0, 1).WithSymbol("exit"), // allow, always
		asm.Return(),
	)
	return insns
}

// dnsRingSize is the DNS ring buffer's size: ~2900 records of dnsRecSize (plus an 8-byte header each)
// between two reads of user space.
const dnsRingSize = 256 << 10

// The ring buffer's flags and query (include/uapi/linux/bpf.h).
const (
	bpfRBNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	bpfRBForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	bpfRBAvailData   = 0 // BPF_RB_AVAIL_DATA: bytes written and not yet read
)

// dnsWakeAt is how full the ring is (an eighth: ~370 records) when a record wakes user space; below it,
// user space reads every dnsPoll, so at most ~3700 records/s are delivered between polls without a
// wake-up, and a faster stream wakes it every ~370.
const dnsWakeAt = dnsRingSize / 8

// dnsPoll is how often the DNS tracer reads the ring buffer without a wake-up: how late a record may be
// delivered (a query's result is, at most, that and the pairing's tick late).
const dnsPoll = 100 * time.Millisecond

// dnsCollectionSpec is the two cgroup_skb programs and their ring buffer; with netns their records carry the
// socket's network namespace cookie.
func dnsCollectionSpec(netns bool) *cebpf.CollectionSpec {
	prog := func(name string, egress bool, at cebpf.AttachType) *cebpf.ProgramSpec {
		return &cebpf.ProgramSpec{Name: name, Type: cebpf.CGroupSKB, AttachType: at, License: "GPL", Instructions: dnsProgram(egress, netns)}
	}
	return &cebpf.CollectionSpec{
		Maps: map[string]*cebpf.MapSpec{
			"events": {Name: "ks_dns_events", Type: cebpf.RingBuf, MaxEntries: dnsRingSize},
		},
		Programs: map[string]*cebpf.ProgramSpec{
			"queries": prog("ks_dns_query", true, cebpf.AttachCGroupInetEgress),
			"answers": prog("ks_dns_answer", false, cebpf.AttachCGroupInetIngress),
		},
	}
}
