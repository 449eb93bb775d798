package ebpf

import (
	"net/netip"
	"slices"
	"time"
)

// DefaultDNSTimeout is how long a query may wait for its answer before it counts as timed out: the
// resolvers' usual (glibc's and Go's "options timeout:5"; musl's is 5 s in all).
const DefaultDNSTimeout = 5 * time.Second

// dnsPendingMax bounds the queries waiting for an answer that the pairing follows: past it (a flood of
// unanswered queries), new queries are counted as untracked instead of held.
const dnsPendingMax = 1 << 18

// dnsClientKey is a query's key less its server: the client socket's end, its cgroup and network namespace
// (loopback ends are the same in every namespace) and the DNS ID.
type dnsClientKey struct {
	cgroup uint64
	netns  uint64
	client netip.AddrPort
	id     uint16
}

type pendingQuery struct {
	DNSResult
	done bool // answered or timed out: its place in the expiry queue is stale
}

// dnsPairer pairs DNS queries with their answers by (cgroup, network namespace, client address:port, server
// address:port, DNS ID), in the order the ring buffer gives the packets (which is the order of the hooks' runs for one socket:
// an answer cannot arrive before its query's program has sent its record, since the query leaves after it).
//
//   - A query whose key is pending is a retransmission: counted, and the latency stays the first's.
//   - An answer closes the pending query of its key; the key can then be used again (ID reuse).
//   - An answer whose exact key is not pending but whose client socket and ID have exactly one pending query,
//     to another server, closes that one: a host-network socket's query to a Service address is seen after
//     the DNAT to a backend (the cgroup egress hook runs after netfilter's OUTPUT), its answer after the
//     reverse translation, from the Service's address.
//   - Any other answer is unmatched: its query came before the tracer, was not traced (the ring was full),
//     has timed out already, or was answered already (a second answer to a retransmitted query).
//   - A query pending for the timeout is timed out: the time is the packets' (each packet expires what is
//     older than it by the timeout) or the caller's (expire, on a clock tick when no packet comes).
//
// It is not safe for concurrent use.
type dnsPairer struct {
	timeout   time.Duration
	pending   map[dnsClientKey][]*pendingQuery // usually one: more when a socket asks several servers with one ID (musl)
	queue     []*pendingQuery                  // by first transmission, for expiry; head is the first not popped
	head      int
	n         int // pending queries
	max       int // dnsPendingMax; smaller in tests
	unmatched uint64
	untracked uint64
}

func newDNSPairer(timeout time.Duration) *dnsPairer {
	if timeout <= 0 {
		timeout = DefaultDNSTimeout
	}
	return &dnsPairer{timeout: timeout, max: dnsPendingMax, pending: map[dnsClientKey][]*pendingQuery{}}
}

// add takes one packet, expiring first what timed out by its time; emit gets each query that ends.
func (p *dnsPairer) add(pk DNSPacket, emit func(DNSResult)) {
	p.expire(pk.TimeNS, emit)
	k := dnsClientKey{cgroup: pk.CgroupID, netns: pk.NetnsCookie, client: pk.Client, id: pk.ID}
	qs := p.pending[k]
	i := slices.IndexFunc(qs, func(q *pendingQuery) bool { return q.Server == pk.Server })
	if pk.Dir == DNSQuery {
		if i >= 0 {
			qs[i].Retransmits++
			return
		}
		if p.n >= p.max {
			p.untracked++
			return
		}
		q := &pendingQuery{DNSResult: DNSResult{CgroupID: pk.CgroupID, NetnsCookie: pk.NetnsCookie, Client: pk.Client, Server: pk.Server, ID: pk.ID,
			QType: pk.QType, SentNS: pk.TimeNS}}
		p.pending[k] = append(qs, q)
		p.queue = append(p.queue, q)
		p.n++
		return
	}
	if i < 0 && len(qs) == 1 {
		i = 0 // the server's address translated between the two hooks
	}
	if i < 0 {
		p.unmatched++
		return
	}
	q := qs[i]
	p.forget(k, q)
	r := q.DNSResult
	r.Outcome, r.RCode, r.ANCount, r.Truncated = Answered, pk.RCode(), pk.ANCount, pk.Truncated()
	if pk.TimeNS > q.SentNS {
		r.Latency = time.Duration(pk.TimeNS - q.SentNS)
	}
	emit(r)
}

// expire times out every query sent a timeout or more before nowNS (CLOCK_MONOTONIC), oldest first.
func (p *dnsPairer) expire(nowNS uint64, emit func(DNSResult)) {
	for p.head < len(p.queue) {
		q := p.queue[p.head]
		if !q.done {
			if nowNS < q.SentNS || time.Duration(nowNS-q.SentNS) < p.timeout {
				break
			}
			p.forget(dnsClientKey{cgroup: q.CgroupID, netns: q.NetnsCookie, client: q.Client, id: q.ID}, q)
			r := q.DNSResult
			r.Outcome = TimedOut
			emit(r)
		}
		p.queue[p.head] = nil
		p.head++
	}
	if p.head > 1024 && p.head*2 > len(p.queue) {
		p.queue = slices.Clone(p.queue[p.head:])
		p.head = 0
	}
}

// forget removes q, pending under k, and marks it done.
func (p *dnsPairer) forget(k dnsClientKey, q *pendingQuery) {
	qs := slices.DeleteFunc(p.pending[k], func(o *pendingQuery) bool { return o == q })
	if len(qs) == 0 {
		delete(p.pending, k)
	} else {
		p.pending[k] = qs
	}
	q.done = true
	p.n--
}
