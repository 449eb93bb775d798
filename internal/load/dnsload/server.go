package dnsload

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Upstream is a small authoritative DNS server for "external" names in the lab, with a per-source query
// limit like the one a cloud's resolver applies per VM (case B: ~200 queries/s): every name under Zone
// answers an A record (Addr), others NXDOMAIN; a source over Limit queries per second is not answered (the
// queries are dropped, as a cloud resolver drops them), so its clients time out.
type Upstream struct {
	Zone  string
	Addr  net.IP
	Limit float64 // queries per second per source address; 0 = no limit

	mu      sync.Mutex
	buckets map[string]*bucket
	// Answered and Dropped count per source.
	Answered, Dropped map[string]int64
}

type bucket struct {
	tokens float64
	last   time.Time
}

// allow takes a token from src's bucket (capacity one second of the limit).
func (u *Upstream) allow(src string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.buckets == nil {
		u.buckets, u.Answered, u.Dropped = map[string]*bucket{}, map[string]int64{}, map[string]int64{}
	}
	if u.Limit <= 0 {
		u.Answered[src]++
		return true
	}
	b := u.buckets[src]
	if b == nil {
		b = &bucket{tokens: u.Limit, last: now}
		u.buckets[src] = b
	}
	b.tokens = min(u.Limit, b.tokens+now.Sub(b.last).Seconds()*u.Limit)
	b.last = now
	if b.tokens < 1 {
		u.Dropped[src]++
		return false
	}
	b.tokens--
	u.Answered[src]++
	return true
}

// Counts returns a copy of the per-source counts.
func (u *Upstream) Counts() (answered, dropped map[string]int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	answered, dropped = map[string]int64{}, map[string]int64{}
	for k, v := range u.Answered {
		answered[k] = v
	}
	for k, v := range u.Dropped {
		dropped[k] = v
	}
	return answered, dropped
}

// ServeDNS implements dns.Handler.
func (u *Upstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	src := w.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(src); err == nil {
		src = h
	}
	if !u.allow(src, time.Now()) {
		return
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) == 1 {
		q := r.Question[0]
		zone := dns.Fqdn(u.Zone)
		switch {
		case !strings.HasSuffix(strings.ToLower(q.Name), strings.ToLower(zone)):
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: u.Addr})
		}
	}
	_ = w.WriteMsg(m)
}

// ListenAndServe serves UDP on addr until ctx ends; ready is called once the socket listens.
func (u *Upstream) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	// As the generator's sockets (socketBuffer): with the default, a CPU-starved machine would look like an
	// upstream that drops queries its limit let through.
	if uc, ok := pc.(*net.UDPConn); ok {
		_ = uc.SetReadBuffer(socketBuffer)
	}
	srv := &dns.Server{PacketConn: pc, Handler: u, UDPSize: 4096}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	errc := make(chan error, 1)
	go func() { errc <- srv.ActivateAndServe() }()
	select {
	case <-started:
		if ready != nil {
			ready(pc.LocalAddr())
		}
	case err := <-errc:
		return err
	}
	select {
	case <-ctx.Done():
		_ = srv.Shutdown()
		return nil
	case err := <-errc:
		return err
	}
}
