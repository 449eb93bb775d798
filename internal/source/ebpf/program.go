package ebpf

import (
	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The kernel's TCP states (include/net/tcp_states.h) and address families the program compares.
const (
	tcpEstablished = 1
	tcpSynSent     = 2
	tcpClose       = 7
	afInet         = 2
	afInet6        = 10
	ipprotoTCP     = 6
)

// The start map's value, written at SYN_SENT: what only the connecting task's context knows.
const (
	startTS    = 0  // u64 bpf_ktime_get_ns
	startCgrp  = 8  // u64 bpf_get_current_cgroup_id
	startPid   = 16 // u64: tgid in the low 32 bits
	startComm  = 24 // [16]byte bpf_get_current_comm
	startValSz = 40
)

// The ring buffer's record (ConnectEvent's wire form; decodeEvent reads it).
const (
	evLatency  = 0  // u64 ns from SYN_SENT to ESTABLISHED or CLOSE
	evCgroup   = 8  // u64
	evStart    = 16 // u64 ktime ns of SYN_SENT
	evPid      = 24 // u32
	evFamily   = 28 // u16
	evSport    = 30 // u16, host order
	evDport    = 32 // u16, host order
	evNewState = 34 // u16: tcpEstablished or tcpClose
	evSaddr    = 36 // [16]byte: IPv4 in the first 4
	evDaddr    = 52 // [16]byte
	evComm     = 68 // [16]byte
	evSize     = 88 // 4 bytes of padding at 84
)

// Stack slots (offsets from R10, the frame pointer).
const (
	fpKey = -8                 // u64 skaddr: the start map's key
	fpVal = fpKey - startValSz // the start value being built
	fpNow = fpVal - 8          // u64 ktime at the closing transition
)

// connectProgram returns the tracepoint program for sock/inet_sock_set_state with the record layout l. On
// a TCP socket entering SYN_SENT it stores {now, cgroup id, tgid, comm} under the socket's address in the
// map "starts"; on the socket leaving SYN_SENT for ESTABLISHED or CLOSE it reserves an evSize record in the
// ring buffer "events", fills it from the start value and the tracepoint's tuple, submits it and deletes
// the start (any other exit from SYN_SENT just deletes it).
func connectProgram(l setStateLayout) asm.Instructions {
	const (
		ctx   = asm.R6
		newSt = asm.R7
		tmp   = asm.R8 // oldstate; then the ring buffer record
		val   = asm.R9 // the start value
	)
	copyAddr := func(v4, v6, dst int16, label string) asm.Instructions {
		// IPv4: the 4 bytes then 12 zeros; IPv6: the 16 bytes, 4 at a time (ctx loads must be aligned).
		return asm.Instructions{
			asm.LoadMem(asm.R1, ctx, int16(l.Family), asm.Half),
			asm.JEq.Imm(asm.R1, afInet6, label+"_v6"),
			asm.LoadMem(asm.R1, ctx, v4, asm.Word),
			asm.StoreMem(tmp, dst, asm.R1, asm.Word),
			asm.StoreImm(tmp, dst+4, 0, asm.Word),
			asm.StoreImm(tmp, dst+8, 0, asm.Word),
			asm.StoreImm(tmp, dst+12, 0, asm.Word),
			asm.Ja.Label(label + "_done"),
			asm.LoadMem(asm.R1, ctx, v6, asm.Word).WithSymbol(label + "_v6"),
			asm.StoreMem(tmp, dst, asm.R1, asm.Word),
			asm.LoadMem(asm.R1, ctx, v6+4, asm.Word),
			asm.StoreMem(tmp, dst+4, asm.R1, asm.Word),
			asm.LoadMem(asm.R1, ctx, v6+8, asm.Word),
			asm.StoreMem(tmp, dst+8, asm.R1, asm.Word),
			asm.LoadMem(asm.R1, ctx, v6+12, asm.Word),
			asm.StoreMem(tmp, dst+12, asm.R1, asm.Word),
			asm.Mov.Imm(asm.R1, 0).WithSymbol(label + "_done"), // a landing for the jump
		}
	}
	insns := asm.Instructions{
		asm.Mov.Reg(ctx, asm.R1),
		asm.LoadMem(asm.R1, ctx, int16(l.Protocol), asm.Half),
		asm.JNE.Imm(asm.R1, ipprotoTCP, "exit"),
		asm.LoadMem(asm.R1, ctx, int16(l.Family), asm.Half),
		asm.JEq.Imm(asm.R1, afInet, "family_ok"),
		asm.JNE.Imm(asm.R1, afInet6, "exit"),
		asm.LoadMem(newSt, ctx, int16(l.NewState), asm.Word).WithSymbol("family_ok"),
		asm.LoadMem(tmp, ctx, int16(l.OldState), asm.Word),
		asm.LoadMem(asm.R1, ctx, int16(l.Skaddr), asm.DWord),
		asm.StoreMem(asm.RFP, fpKey, asm.R1, asm.DWord),
		asm.JNE.Imm(newSt, tcpSynSent, "leaving"),

		// Entering SYN_SENT, in the connecting task's context (connect(2)).
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, fpVal+startTS, asm.R0, asm.DWord),
		asm.FnGetCurrentCgroupId.Call(),
		asm.StoreMem(asm.RFP, fpVal+startCgrp, asm.R0, asm.DWord),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, fpVal+startPid, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, fpVal+startComm),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
		asm.LoadMapPtr(asm.R1, 0).WithReference("starts"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpKey),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, fpVal),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY: a socket connecting again starts over
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("exit"),

		// Leaving SYN_SENT (often in softirq: the SYN-ACK or the RST): pair with the start.
		asm.JNE.Imm(tmp, tcpSynSent, "exit").WithSymbol("leaving"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("starts"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(val, asm.R0),
		asm.JEq.Imm(newSt, tcpEstablished, "emit"),
		asm.JNE.Imm(newSt, tcpClose, "delete"),
		asm.FnKtimeGetNs.Call().WithSymbol("emit"),
		asm.StoreMem(asm.RFP, fpNow, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("events"),
		asm.Mov.Imm(asm.R2, evSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "delete"), // the ring is full: the event is lost
		asm.Mov.Reg(tmp, asm.R0),

		asm.LoadMem(asm.R1, asm.RFP, fpNow, asm.DWord),
		asm.LoadMem(asm.R2, val, startTS, asm.DWord),
		asm.StoreMem(tmp, evStart, asm.R2, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.StoreMem(tmp, evLatency, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, val, startCgrp, asm.DWord),
		asm.StoreMem(tmp, evCgroup, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, val, startPid, asm.DWord),
		asm.StoreMem(tmp, evPid, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, val, startComm, asm.DWord),
		asm.StoreMem(tmp, evComm, asm.R1, asm.Word),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(tmp, evComm+4, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, val, startComm+8, asm.DWord),
		asm.StoreMem(tmp, evComm+8, asm.R1, asm.Word),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(tmp, evComm+12, asm.R1, asm.Word),
		asm.StoreImm(tmp, evComm+16, 0, asm.Word), // padding
		asm.LoadMem(asm.R1, ctx, int16(l.Family), asm.Half),
		asm.StoreMem(tmp, evFamily, asm.R1, asm.Half),
		asm.LoadMem(asm.R1, ctx, int16(l.Sport), asm.Half),
		asm.StoreMem(tmp, evSport, asm.R1, asm.Half),
		asm.LoadMem(asm.R1, ctx, int16(l.Dport), asm.Half),
		asm.StoreMem(tmp, evDport, asm.R1, asm.Half),
		asm.StoreMem(tmp, evNewState, newSt, asm.Half),
	}
	insns = append(insns, copyAddr(int16(l.Saddr), int16(l.SaddrV6), evSaddr, "saddr")...)
	insns = append(insns, copyAddr(int16(l.Daddr), int16(l.DaddrV6), evDaddr, "daddr")...)
	insns = append(insns,
		asm.Mov.Reg(asm.R1, tmp),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufSubmit.Call(),

		asm.LoadMapPtr(asm.R1, 0).WithReference("starts").WithSymbol("delete"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, fpKey),
		asm.FnMapDeleteElem.Call(),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return insns
}

// startsMax bounds the connects in SYN_SENT at once that the tracer follows; an LRU map, so a socket whose
// end the program never saw cannot fill it.
const startsMax = 16384

// ringSize is the ring buffer's size: ~2900 events of evSize (plus an 8-byte header each) between reads.
const ringSize = 256 << 10

// collectionSpec is the program and its two maps.
func collectionSpec(l setStateLayout) *cebpf.CollectionSpec {
	return &cebpf.CollectionSpec{
		Maps: map[string]*cebpf.MapSpec{
			"starts": {Name: "ks_conn_starts", Type: cebpf.LRUHash, KeySize: 8, ValueSize: startValSz, MaxEntries: startsMax},
			"events": {Name: "ks_conn_events", Type: cebpf.RingBuf, MaxEntries: ringSize},
		},
		Programs: map[string]*cebpf.ProgramSpec{
			"connects": {Name: "ks_tcp_connect", Type: cebpf.TracePoint, License: "GPL", Instructions: connectProgram(l)},
		},
	}
}
