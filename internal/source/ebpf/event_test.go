package ebpf

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// encodeEvent is decodeEvent's inverse.
func encodeEvent(ev ConnectEvent) []byte {
	b := make([]byte, evSize)
	ne := binary.NativeEndian
	ne.PutUint64(b[evLatency:], uint64(ev.Latency))
	ne.PutUint64(b[evStart:], ev.StartNS)
	ne.PutUint64(b[evCgroup:], ev.CgroupID)
	ne.PutUint32(b[evPid:], ev.Pid)
	copy(b[evComm:evComm+16], ev.Comm)
	family := uint16(afInet6)
	if ev.Dest.Addr().Is4() {
		family = afInet
		s, d := ev.Source.Addr().As4(), ev.Dest.Addr().As4()
		copy(b[evSaddr:], s[:])
		copy(b[evDaddr:], d[:])
	} else {
		s, d := ev.Source.Addr().As16(), ev.Dest.Addr().As16()
		copy(b[evSaddr:], s[:])
		copy(b[evDaddr:], d[:])
	}
	ne.PutUint16(b[evFamily:], family)
	ne.PutUint16(b[evSport:], ev.Source.Port())
	ne.PutUint16(b[evDport:], ev.Dest.Port())
	st := uint16(tcpEstablished)
	if ev.Outcome == Failed {
		st = tcpClose
	}
	ne.PutUint16(b[evNewState:], st)
	return b
}

func TestDecodeEvent(t *testing.T) {
	// A record as the program writes it, byte by byte (little-endian, as on amd64 and arm64).
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		b := make([]byte, evSize)
		copy(b[0:], []byte{0x40, 0x42, 0x0f, 0, 0, 0, 0, 0})  // latency 1,000,000 ns
		copy(b[8:], []byte{0x39, 0x30, 0, 0, 0, 0, 0, 0})     // cgroup 12345
		copy(b[16:], []byte{0xe8, 0x03, 0, 0, 0, 0, 0, 0})    // start 1000
		copy(b[24:], []byte{0x2a, 0, 0, 0})                   // pid 42
		copy(b[28:], []byte{2, 0, 0x39, 0xd4, 0x50, 0, 1, 0}) // AF_INET, sport 54329, dport 80, ESTABLISHED
		copy(b[36:], []byte{10, 0, 0, 7})                     // saddr 10.0.0.7
		copy(b[52:], []byte{192, 168, 1, 1})                  // daddr 192.168.1.1
		copy(b[68:], "curl\x00garbage")                       // comm
		ev, err := decodeEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		want := ConnectEvent{Latency: time.Millisecond, StartNS: 1000, CgroupID: 12345, Pid: 42, Comm: "curl",
			Source: netip.MustParseAddrPort("10.0.0.7:54329"), Dest: netip.MustParseAddrPort("192.168.1.1:80"),
			Outcome: Established}
		if ev != want {
			t.Errorf("decoded %+v\nwant %+v", ev, want)
		}
	}

	for _, ev := range []ConnectEvent{
		{Latency: 3 * time.Second, StartNS: 99, CgroupID: 7, Pid: 1, Comm: "a-sixteen-byte-n",
			Source: netip.MustParseAddrPort("[fd00::1]:40000"), Dest: netip.MustParseAddrPort("[2001:db8::53]:53"),
			Outcome: Failed},
		{Latency: 1, Source: netip.MustParseAddrPort("127.0.0.1:1"), Dest: netip.MustParseAddrPort("127.0.0.1:2"),
			Outcome: Failed},
	} {
		got, err := decodeEvent(encodeEvent(ev))
		if err != nil {
			t.Fatal(err)
		}
		if got != ev {
			t.Errorf("round trip %+v\ngave %+v", ev, got)
		}
	}

	// A dual-stack socket's IPv4 peer decodes as IPv4.
	mapped := encodeEvent(ConnectEvent{Source: netip.MustParseAddrPort("[::ffff:10.0.0.2]:5000"), Dest: netip.MustParseAddrPort("[::ffff:10.0.0.1]:80"), Outcome: Established})
	if ev, err := decodeEvent(mapped); err != nil || ev.Dest != netip.MustParseAddrPort("10.0.0.1:80") || ev.Source != netip.MustParseAddrPort("10.0.0.2:5000") {
		t.Errorf("IPv4-mapped: %+v %v", ev, err)
	}

	ok := encodeEvent(ConnectEvent{Source: netip.MustParseAddrPort("127.0.0.1:1"), Dest: netip.MustParseAddrPort("127.0.0.1:2"), Outcome: Established})
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"short":  {ok[:evSize-1], "87 bytes"},
		"family": {patch(ok, evFamily, 1), "family 1"},
		"state":  {patch(ok, evNewState, 3), "state 3"},
	} {
		if _, err := decodeEvent(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}

func patch(b []byte, off int, v uint16) []byte {
	b = append([]byte(nil), b...)
	binary.NativeEndian.PutUint16(b[off:], v)
	return b
}

func TestOutcomeString(t *testing.T) {
	if Established.String() != "established" || Failed.String() != "failed" || Outcome(9).String() != "Outcome(9)" {
		t.Error(Established, Failed, Outcome(9))
	}
}
