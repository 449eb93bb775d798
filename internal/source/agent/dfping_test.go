package agent

import (
	"testing"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// ipv4Packet wraps an ICMP message in a minimal IPv4 header.
func ipv4Packet(icmpMsg []byte) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	h[9] = 1
	return append(h, icmpMsg...)
}

// TestClassify: our echo reply matches; another id or seq does not; a fragmentation-needed quoting our echo
// yields the next-hop MTU; one quoting another echo does not match.
func TestClassify(t *testing.T) {
	p := &pinger{id: 77, seq: 5}
	echo := func(typ icmp.Type, id, seq int) []byte {
		b, err := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("x")}}).Marshal(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if ok, fn, match := p.classify(ipv4Packet(echo(ipv4.ICMPTypeEchoReply, 77, 5))); !ok || fn != nil || !match {
		t.Errorf("own reply: ok %v fn %v match %v", ok, fn, match)
	}
	if _, _, match := p.classify(ipv4Packet(echo(ipv4.ICMPTypeEchoReply, 77, 4))); match {
		t.Error("an older seq matched")
	}
	fragNeeded := func(id, seq int) []byte {
		quoted := ipv4Packet(echo(ipv4.ICMPTypeEcho, id, seq))
		b, err := (&icmp.Message{Type: ipv4.ICMPTypeDestinationUnreachable, Code: 4, Body: &icmp.DstUnreach{Data: quoted}}).Marshal(nil)
		if err != nil {
			t.Fatal(err)
		}
		b[6], b[7] = 0x05, 0xaa // next-hop MTU 1450
		return ipv4Packet(b)
	}
	if ok, fn, match := p.classify(fragNeeded(77, 5)); ok || !match || fn == nil || fn.MTU != 1450 {
		t.Errorf("frag needed: ok %v fn %+v match %v", ok, fn, match)
	}
	if _, _, match := p.classify(fragNeeded(78, 5)); match {
		t.Error("a frag-needed about another echo matched")
	}
}

// The DF probe's parser of received packets must never panic.
func FuzzClassify(f *testing.F) {
	f.Add(ipv4Packet([]byte{0, 0, 0, 0, 0, 77, 0, 5}))
	f.Add([]byte{0x45})
	f.Add(ipv4Packet([]byte{3, 4, 0, 0, 0, 0, 5, 0xaa, 0x45}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &pinger{id: 77, seq: 5}
		ok, fn, match := p.classify(b)
		if (ok || fn != nil) && !match {
			t.Fatalf("%x: ok %v fn %v without a match", b, ok, fn)
		}
	})
}
