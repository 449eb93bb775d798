package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// ICMPHeaders is what an ICMP echo adds to its payload in an IPv4 packet: the IPv4 header (20) and the ICMP
// header (8). `ping -s MTU-28 -M do` fills exactly one MTU.
const ICMPHeaders = 28

// DFPing is the result of `probe df-ping`: ICMP echoes with Don't Fragment set, of the sizes that fill the
// sender's MTU exactly and exceed it by one byte, and — when the full size fails — the largest size that
// passes (a binary search): the path's MTU as the packets see it.
type DFPing struct {
	Target string `json:"target"`
	// LocalMTU is the MTU of the interface the probe leaves by (its route to Target).
	LocalMTU int      `json:"local_mtu"`
	Iface    string   `json:"iface"`
	Probes   []DFSend `json:"probes"`
	// PathMTU is the largest IP packet (bytes, headers included) that reached Target and came back with DF set;
	// 0 when even the smallest did not (then the path is down, not narrow).
	PathMTU int `json:"path_mtu"`
	// FragNeeded are the ICMP "fragmentation needed" (type 3 code 4) messages the probe received: from whom
	// and the next-hop MTU they name.
	FragNeeded []FragNeeded `json:"frag_needed,omitempty"`
}

// DFSend is one probe size's outcome.
type DFSend struct {
	Bytes int  `json:"bytes"` // IP packet size (payload + ICMPHeaders)
	OK    bool `json:"ok"`
	// Error is why it failed: "message too long" (the sender's own MTU refused it), "timeout" (lost on the
	// way: no answer and no ICMP error), "fragmentation needed (MTU n) from X".
	Error string `json:"error,omitempty"`
}

// FragNeeded is one ICMP "fragmentation needed" message.
type FragNeeded struct {
	From string `json:"from"`
	MTU  int    `json:"mtu"`
}

// DFPingOptions configure RunDFPing.
type DFPingOptions struct {
	Target string
	// Wait is how long one echo waits for its reply.
	Wait time.Duration
	// Tries per size before it counts as failed.
	Tries int
}

// RunDFPing sends the DF echoes from this network namespace (a raw ICMP socket: root or CAP_NET_RAW).
func RunDFPing(ctx context.Context, o DFPingOptions) (*DFPing, error) {
	dst := net.ParseIP(o.Target).To4()
	if dst == nil {
		return nil, fmt.Errorf("df-ping: %q is not an IPv4 address", o.Target)
	}
	if o.Wait <= 0 {
		o.Wait = 500 * time.Millisecond
	}
	if o.Tries <= 0 {
		o.Tries = 2
	}
	iface, mtu, err := routeMTU(dst)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return nil, fmt.Errorf("df-ping: raw ICMP socket (needs root or CAP_NET_RAW): %w", err)
	}
	defer unix.Close(fd)
	// PROBE: DF set, the route's cached path MTU ignored (only the interface's MTU applies), so each size is
	// tried on the wire even after a "fragmentation needed" lowered the cache.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE); err != nil {
		return nil, fmt.Errorf("df-ping: IP_MTU_DISCOVER: %w", err)
	}
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	p := &pinger{fd: fd, dst: [4]byte(dst), id: os.Getpid() & 0xffff, wait: o.Wait}
	out := &DFPing{Target: o.Target, LocalMTU: mtu, Iface: iface}
	try := func(size int, tries int) DFSend {
		var s DFSend
		for i := 0; i < tries && ctx.Err() == nil; i++ {
			s = p.echo(size, out)
			if s.OK || s.Error == "message too long" {
				break
			}
		}
		return s
	}
	full := try(mtu, o.Tries)
	out.Probes = append(out.Probes, full, try(mtu+1, 1))
	if full.OK {
		out.PathMTU = mtu
		return out, ctx.Err()
	}
	// The largest size that passes, between the smallest IPv4 must carry (68) and the MTU.
	lo, hi := 68, mtu-1
	if s := try(lo, o.Tries); !s.OK {
		out.Probes = append(out.Probes, s)
		return out, ctx.Err()
	}
	for lo < hi && ctx.Err() == nil {
		mid := (lo + hi + 1) / 2
		s := try(mid, 1)
		out.Probes = append(out.Probes, s)
		if s.OK {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	out.PathMTU = lo
	return out, ctx.Err()
}

type pinger struct {
	fd   int
	dst  [4]byte
	id   int
	seq  int
	wait time.Duration
}

// echo sends one echo request of size bytes (IP packet) and waits for its reply or an ICMP error about it.
func (p *pinger) echo(size int, out *DFPing) DFSend {
	s := DFSend{Bytes: size}
	p.seq++
	payload := make([]byte, max(size-ICMPHeaders, 0))
	for i := range payload {
		payload[i] = byte(i)
	}
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: p.id, Seq: p.seq, Data: payload}}
	b, err := msg.Marshal(nil)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if err := unix.Sendto(p.fd, b, 0, &unix.SockaddrInet4{Addr: p.dst}); err != nil {
		if errors.Is(err, unix.EMSGSIZE) {
			s.Error = "message too long"
		} else {
			s.Error = err.Error()
		}
		return s
	}
	deadline := time.Now().Add(p.wait)
	buf := make([]byte, 65536)
	for time.Now().Before(deadline) {
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			s.Error = err.Error()
			return s
		}
		ok, fn, match := p.classify(buf[:n])
		if !match {
			continue
		}
		if fn != nil {
			if a, isV4 := from.(*unix.SockaddrInet4); isV4 {
				fn.From = net.IP(a.Addr[:]).String()
			}
			out.FragNeeded = append(out.FragNeeded, *fn)
			s.Error = fmt.Sprintf("fragmentation needed (MTU %d) from %s", fn.MTU, fn.From)
			return s
		}
		s.OK = ok
		return s
	}
	s.Error = "timeout"
	return s
}

// classify reads one received IPv4 packet: our echo's reply (ok), or an ICMP "fragmentation needed" quoting our
// echo (fn); match is false for anything else.
func (p *pinger) classify(pkt []byte) (ok bool, fn *FragNeeded, match bool) {
	body, ok4 := stripIPv4(pkt)
	if !ok4 {
		return false, nil, false
	}
	m, err := icmp.ParseMessage(1, body)
	if err != nil {
		return false, nil, false
	}
	switch m.Type {
	case ipv4.ICMPTypeEchoReply:
		e, isEcho := m.Body.(*icmp.Echo)
		return isEcho && e.ID == p.id && e.Seq == p.seq, nil, isEcho && e.ID == p.id && e.Seq == p.seq
	case ipv4.ICMPTypeDestinationUnreachable:
		du, isDU := m.Body.(*icmp.DstUnreach)
		if !isDU || m.Code != 4 {
			return false, nil, false
		}
		// The quoted packet: our echo request's IPv4 header and at least 8 bytes of its ICMP header.
		inner, okIn := stripIPv4(du.Data)
		if !okIn || len(inner) < 8 || inner[0] != byte(ipv4.ICMPTypeEcho) {
			return false, nil, false
		}
		id, seq := int(inner[4])<<8|int(inner[5]), int(inner[6])<<8|int(inner[7])
		if id != p.id || seq != p.seq {
			return false, nil, false
		}
		// The next-hop MTU is the low 16 bits of the header's second word (RFC 1191); x/net keeps the word in
		// the message's checksum-free header, so read it from the raw body.
		return false, &FragNeeded{MTU: int(body[6])<<8 | int(body[7])}, true
	}
	return false, nil, false
}

// stripIPv4 returns an IPv4 packet's payload.
func stripIPv4(b []byte) ([]byte, bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return nil, false
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || len(b) < ihl {
		return nil, false
	}
	return b[ihl:], true
}

// routeMTU is the interface the route to dst leaves by and its MTU (a connected UDP socket asks the kernel's
// routing table; nothing is sent).
func routeMTU(dst net.IP) (string, int, error) {
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: dst, Port: 9})
	if err != nil {
		return "", 0, fmt.Errorf("df-ping: no route to %s: %w", dst, err)
	}
	local := c.LocalAddr().(*net.UDPAddr).IP
	c.Close()
	ifs, err := net.Interfaces()
	if err != nil {
		return "", 0, err
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(local) {
				return i.Name, i.MTU, nil
			}
		}
	}
	return "", 0, fmt.Errorf("df-ping: no interface holds %s (the source address towards %s)", local, dst)
}
