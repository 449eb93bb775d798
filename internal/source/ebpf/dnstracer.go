package ebpf

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	cebpf "github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// DNSTracer times the UDP DNS queries of every socket in a cgroup v2 directory and its descendants (at the
// hierarchy's root: every socket of the host, in every network namespace) from two cgroup_skb programs,
// and pairs each query with its answer, until Close or its context ends.
type DNSTracer struct {
	r         *ringTracer[DNSPacket]
	events    chan DNSResult
	paired    chan struct{} // closed at the pairing's end
	unmatched atomic.Uint64
	untracked atomic.Uint64
	netns     bool
}

// StartDNS loads the DNS programs and attaches them to cgroupDir, a cgroup v2 directory (CgroupRoot for
// the whole host), beside any program already there. A query unanswered for timeout counts as timed out
// (0: DefaultDNSTimeout). It needs what SupportedDNSAt(cgroupDir) checks (and returns its error when it is not nil). The
// tracer stops when ctx ends or on Close.
func StartDNS(ctx context.Context, cgroupDir string, timeout time.Duration) (*DNSTracer, error) {
	if err := SupportedDNSAt(cgroupDir); err != nil {
		return nil, err
	}
	netns := netnsCookieSupported()
	r, err := startRing(ctx, dnsCollectionSpec(netns), "DNS programs", decodeDNS, dnsPoll, func(coll *cebpf.Collection) ([]link.Link, error) {
		var links []link.Link
		for _, p := range []struct {
			name string
			at   cebpf.AttachType
		}{{"queries", cebpf.AttachCGroupInetEgress}, {"answers", cebpf.AttachCGroupInetIngress}} {
			// A bpf_link where the kernel has it (5.7+), else PROG_ATTACH with BPF_F_ALLOW_MULTI: either way
			// beside the programs of systemd, a CNI or another tracer, and detached when the tracer ends.
			l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: p.at, Program: coll.Programs[p.name]})
			if err != nil {
				return links, fmt.Errorf("attaching the DNS %s program to the cgroup %s: %w", p.name, cgroupDir, err)
			}
			links = append(links, l)
		}
		return links, nil
	})
	if err != nil {
		return nil, err
	}
	t := &DNSTracer{r: r, events: make(chan DNSResult, eventsBuffer), paired: make(chan struct{}), netns: netns}
	go t.pair(newDNSPairer(timeout))
	return t, nil
}

// Events delivers the queries as they end: answered (in the order of the answers) or timed out (a tick
// after their timeout at the latest). It is closed after Close (or the context's end); the queries still
// waiting for an answer then are not delivered. The consumer must keep up, as with ConnectTracer.Events.
func (t *DNSTracer) Events() <-chan DNSResult { return t.events }

// Netns says whether the results carry their sockets' network namespace (DNSResult.NetnsCookie): false on a
// kernel whose cgroup_skb programs cannot call bpf_get_netns_cookie, where every cookie is 0.
func (t *DNSTracer) Netns() bool { return t.netns }

// Unmatched is how many answers had no query waiting (see the pairing rules in docs/ebpf.md).
func (t *DNSTracer) Unmatched() uint64 { return t.unmatched.Load() }

// Untracked is how many queries were not followed because dnsPendingMax queries were waiting already.
func (t *DNSTracer) Untracked() uint64 { return t.untracked.Load() }

// Undecodable is how many ring buffer records could not be decoded (none, unless the programs and
// decodeDNS disagree).
func (t *DNSTracer) Undecodable() uint64 { return t.r.bad.Load() }

// Close detaches the programs, frees their map and closes Events. It returns the error that ended the
// reading of the ring buffer before Close, if any. It is safe to call more than once.
func (t *DNSTracer) Close() error {
	err := t.r.close()
	<-t.paired
	return err
}

// pair runs p over the decoded packets, and on a clock tick when none comes, until they end.
func (t *DNSTracer) pair(p *dnsPairer) {
	defer close(t.paired)
	defer close(t.events)
	tick := time.NewTicker(min(max(p.timeout/10, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	emit := func(r DNSResult) {
		select {
		case t.events <- r:
		case <-t.r.abandon: // stopped a while ago: the consumer is gone
		}
	}
	for {
		select {
		case pk, ok := <-t.r.out:
			if !ok {
				return
			}
			p.add(pk, emit)
		case <-tick.C:
			p.expire(monotonicNS(), emit)
		}
		t.unmatched.Store(p.unmatched)
		t.untracked.Store(p.untracked)
	}
}

// monotonicNS is CLOCK_MONOTONIC in ns: bpf_ktime_get_ns's clock (clock_gettime cannot fail for it).
func monotonicNS() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}
