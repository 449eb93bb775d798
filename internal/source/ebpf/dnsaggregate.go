package ebpf

import (
	"cmp"
	"net/netip"
	"time"
)

// DNSKey is what the DNSAggregator counts by: the querying socket's cgroup (a pod's container, once mapped)
// and the server it asked; or, for NewDNSClientAggregator, the query's source address (a pod's IP, for a pod
// with a network namespace of its own) and the server, CgroupID left 0. Either way also by the socket's
// network namespace (DNSResult.NetnsCookie, 0 where the kernel cannot tell): a loopback address is every
// namespace's.
type DNSKey struct {
	CgroupID    uint64
	Server      netip.AddrPort
	Client      netip.Addr
	NetnsCookie uint64
}

// DNSStats is one key's queries since the DNSAggregator started (or was last Reset).
type DNSStats struct {
	DNSKey
	// Queries counts every query that ended (a retransmission is not another query); Answered and TimedOut
	// split it; Retransmits counts the retransmissions in them.
	Queries, Answered, TimedOut, Retransmits int64
	// PerSecond is Queries over the window (the start or Reset to the Snapshot).
	PerSecond float64
	// P50, P99 and Max are the answered queries' latencies, from the first transmission; zero when none was
	// answered. Within 1%.
	P50, P99, Max time.Duration
	// The answers by RCODE: NOERROR (NoData of them had no answer record: a name without that type),
	// NXDOMAIN, SERVFAIL and any other (FORMERR, REFUSED, ...). Truncated answers (TC: retried over TCP,
	// which is not traced) are counted too.
	NoError, NoData, NXDomain, ServFail, OtherRCode, Truncated int64
	// The queries by QTYPE: A, AAAA, and any other or unread.
	A, AAAA, OtherQType int64
}

// DNSAggregator sums DNSResults by DNSKey. It is safe for concurrent use.
type DNSAggregator struct {
	w        *window[DNSKey, DNSStats]
	byClient bool
}

// NewDNSAggregator returns an empty DNSAggregator by cgroup id and server whose window starts at now.
func NewDNSAggregator(now time.Time) *DNSAggregator {
	return &DNSAggregator{w: newWindow[DNSKey, DNSStats](now)}
}

// NewDNSClientAggregator returns an empty DNSAggregator by client address and server whose window starts at
// now: where the cgroup ids cannot tell pods apart (a host whose runtime keeps the pods in cgroup v1 only,
// see docs/ebpf.md), a pod's own network namespace gives its queries the pod's IP.
func NewDNSClientAggregator(now time.Time) *DNSAggregator {
	return &DNSAggregator{w: newWindow[DNSKey, DNSStats](now), byClient: true}
}

// Key is the DNSKey r is counted under.
func (a *DNSAggregator) Key(r DNSResult) DNSKey {
	if a.byClient {
		return DNSKey{Client: r.Client.Addr().Unmap(), Server: r.Server, NetnsCookie: r.NetnsCookie}
	}
	return DNSKey{CgroupID: r.CgroupID, Server: r.Server, NetnsCookie: r.NetnsCookie}
}

// Add counts r.
func (a *DNSAggregator) Add(r DNSResult) {
	a.w.add(a.Key(r), func(s *DNSStats, hist latencies) {
		s.Queries++
		s.Retransmits += int64(r.Retransmits)
		switch r.QType {
		case QTypeA:
			s.A++
		case QTypeAAAA:
			s.AAAA++
		default:
			s.OtherQType++
		}
		if r.Outcome != Answered {
			s.TimedOut++
			return
		}
		s.Answered++
		hist.record(r.Latency)
		if r.Truncated {
			s.Truncated++
		}
		switch r.RCode {
		case RCodeNoError:
			s.NoError++
			if r.ANCount == 0 {
				s.NoData++
			}
		case RCodeNXDomain:
			s.NXDomain++
		case RCodeServFail:
			s.ServFail++
		default:
			s.OtherRCode++
		}
	})
}

// Snapshot returns every key's DNSStats over the window from the start (or last Reset) to now, by cgroup id,
// client, server, then network namespace.
func (a *DNSAggregator) Snapshot(now time.Time) []DNSStats {
	return snapshot(a.w, now, func(k DNSKey, s DNSStats, hist latencies, secs float64) DNSStats {
		s.DNSKey, s.PerSecond = k, perSecond(s.Queries, secs)
		s.P50, s.P99, s.Max = hist.quantiles()
		return s
	}, func(x, y DNSStats) int {
		return cmp.Or(cmp.Compare(x.CgroupID, y.CgroupID), x.Client.Compare(y.Client), x.Server.Compare(y.Server), cmp.Compare(x.NetnsCookie, y.NetnsCookie))
	})
}

// Reset empties the DNSAggregator and starts a new window at now.
func (a *DNSAggregator) Reset(now time.Time) { a.w.reset(now) }
