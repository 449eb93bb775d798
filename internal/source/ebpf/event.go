package ebpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// Outcome is how a connect ended: the socket left SYN_SENT for ESTABLISHED, or for CLOSE (refused: an RST;
// timed out: the SYN retries ran out; or the application closed it while connecting).
type Outcome uint8

const (
	Established Outcome = iota + 1
	Failed
)

func (o Outcome) String() string {
	return enumName(o, "Outcome", map[Outcome]string{Established: "established", Failed: "failed"})
}

// enumName is v's name in names, or typ(v) for a value without one.
func enumName[T ~uint8](v T, typ string, names map[T]string) string {
	if s, ok := names[v]; ok {
		return s
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// ConnectEvent is one TCP connect, as the application sees it: from connect(2) putting the socket in
// SYN_SENT to the handshake's end.
type ConnectEvent struct {
	// Latency is SYN_SENT to ESTABLISHED (or to CLOSE for a failure), by the kernel's monotonic clock.
	Latency time.Duration
	// StartNS is the monotonic (CLOCK_MONOTONIC, bpf_ktime_get_ns) time of SYN_SENT, in ns.
	StartNS uint64
	// CgroupID is the cgroup v2 id of the task that called connect (bpf_get_current_cgroup_id, the inode
	// number of its cgroup directory in the unified hierarchy); the root cgroup on a v1-only host.
	CgroupID uint64
	// Pid is the connecting task's process id (tgid) in the host's pid namespace; Comm its name.
	Pid  uint32
	Comm string
	// Source and Dest are the socket's ends when the connect ended (the source port is chosen after
	// SYN_SENT, so it is read then).
	Source, Dest netip.AddrPort
	Outcome      Outcome
}

// decodeEvent reads one ring buffer record (the layout of the ev* constants, little- or big-endian as the
// host: binary.NativeEndian).
func decodeEvent(b []byte) (ConnectEvent, error) {
	if len(b) < evSize {
		return ConnectEvent{}, fmt.Errorf("connect event of %d bytes, want %d", len(b), evSize)
	}
	ne := binary.NativeEndian
	ev := ConnectEvent{
		Latency:  time.Duration(ne.Uint64(b[evLatency:])),
		StartNS:  ne.Uint64(b[evStart:]),
		CgroupID: ne.Uint64(b[evCgroup:]),
		Pid:      ne.Uint32(b[evPid:]),
	}
	comm := b[evComm : evComm+16]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	ev.Comm = string(comm)
	family := ne.Uint16(b[evFamily:])
	sport, dport := ne.Uint16(b[evSport:]), ne.Uint16(b[evDport:])
	var saddr, daddr netip.Addr
	switch family {
	case afInet:
		saddr = netip.AddrFrom4([4]byte(b[evSaddr : evSaddr+4]))
		daddr = netip.AddrFrom4([4]byte(b[evDaddr : evDaddr+4]))
	case afInet6:
		// A dual-stack socket's IPv4 peer is IPv4-mapped (::ffff:a.b.c.d): unmapped, it counts with IPv4's.
		saddr = netip.AddrFrom16([16]byte(b[evSaddr : evSaddr+16])).Unmap()
		daddr = netip.AddrFrom16([16]byte(b[evDaddr : evDaddr+16])).Unmap()
	default:
		return ConnectEvent{}, fmt.Errorf("connect event of address family %d", family)
	}
	ev.Source, ev.Dest = netip.AddrPortFrom(saddr, sport), netip.AddrPortFrom(daddr, dport)
	switch st := ne.Uint16(b[evNewState:]); st {
	case tcpEstablished:
		ev.Outcome = Established
	case tcpClose:
		ev.Outcome = Failed
	default:
		return ConnectEvent{}, fmt.Errorf("connect event ending in TCP state %d", st)
	}
	return ev, nil
}
