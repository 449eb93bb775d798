package agent

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/ebpf"
)

// DNSReport is the node's UDP DNS queries over the agent's watch, timed by the eBPF DNS tracer attached to the
// host's cgroup v2 root (every socket of the node, whatever its network namespace): per client address and
// server, as the application sees them (from the query's first transmission to its answer's arrival at the
// socket). docs/ebpf.md has what is traced and its limits.
type DNSReport struct {
	// Cgroup is the cgroup v2 directory the tracer was attached to, as the agent saw it.
	Cgroup string `json:"cgroup"`
	// WindowSeconds is how long the tracer watched (the agent's whole read, its --window included).
	WindowSeconds float64 `json:"window_seconds"`
	// TimeoutSeconds is how long a query went unanswered to count as timed out: the resolvers' 5 s (glibc's and
	// musl's timeout:5, after which the application's lookup retries). A watch shorter than that counts none
	// (an answer after 1 s is slow, not lost); queries still waiting at the watch's end are not counted.
	TimeoutSeconds float64     `json:"timeout_seconds"`
	Clients        []DNSClient `json:"clients"`
	// UnmatchedAnswers and UntrackedQueries are the tracer's (ebpf.DNSTracer's Unmatched and Untracked).
	UnmatchedAnswers uint64 `json:"unmatched_answers,omitempty"`
	UntrackedQueries uint64 `json:"untracked_queries,omitempty"`
	// Netns says the tracer told network namespaces apart (the kernel lets its programs read a socket's,
	// and the agent its own): a loopback client is then the node's own host network unless OtherNetns.
	// Without it every loopback client is taken for the node's.
	Netns bool `json:"netns,omitempty"`
	// SharedKernel names the other nodes that run on this node's kernel (the same NodeHost.BootID), whose
	// sockets this tracer sees too, and Elsewhere counts the clients dropped from Clients as not this node's:
	// their pods' and addresses' (reported under their own node only) and loopback ones of other network
	// namespaces (OtherNetns: the other nodes' or the host's). Filled in by the measurement, not by the agent.
	SharedKernel []string `json:"shared_kernel,omitempty"`
	Elsewhere    int      `json:"elsewhere,omitempty"`
}

// DNSClient is one client address's queries to one server over the watch (ebpf.DNSStats by client).
type DNSClient struct {
	// Client is the queries' source address: a pod's IP for a pod with a network namespace of its own, the
	// node's for host-network processes. Server is the address and port asked (a Service's, before its DNAT).
	Client string `json:"client"`
	Server string `json:"server"`
	// OtherNetns marks a loopback Client in a network namespace other than the agent's (the node's host
	// network): a pod's own loopback (a resolver in the pod), or, on a kernel several nodes share (the
	// lab's, kind's), another node's or the host's. Those of every such namespace are counted together.
	OtherNetns bool `json:"other_netns,omitempty"`
	// CgroupIDs are the cgroup v2 ids of the sockets seen (at most maxDNSCgroups): the processes of a
	// host-network client, or the one v2 cgroup a cgroup v1 runtime puts every pod in.
	CgroupIDs []uint64 `json:"cgroup_ids,omitempty"`
	// Queries ended in the watch: Answered or TimedOut; Retransmits are the resolvers' resends among them.
	Queries     int64   `json:"queries"`
	Answered    int64   `json:"answered"`
	TimedOut    int64   `json:"timeouts"`
	Retransmits int64   `json:"retransmits"`
	PerSecond   float64 `json:"per_second"`
	// NoError (NoData of them without an answer record), NXDomain, ServFail, OtherRCode and Truncated count
	// the answers; A, AAAA and OtherQType the queries.
	NoError    int64 `json:"noerror"`
	NoData     int64 `json:"nodata"`
	NXDomain   int64 `json:"nxdomain"`
	ServFail   int64 `json:"servfail"`
	OtherRCode int64 `json:"other_rcode"`
	Truncated  int64 `json:"truncated"`
	A          int64 `json:"a"`
	AAAA       int64 `json:"aaaa"`
	OtherQType int64 `json:"other_qtype"`
	// P50, P99 and Max are the answered queries' latencies (seconds; 0 when none was answered).
	P50 float64 `json:"p50_seconds"`
	P99 float64 `json:"p99_seconds"`
	Max float64 `json:"max_seconds"`
	// Namespace and Pod name the pod whose IP Client is, Kind says what the client is ("pod", "host-network",
	// "unknown"): filled in by the measurement from the API, not by the agent.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Kind      string `json:"kind,omitempty"`
}

// maxDNSCgroups bounds the cgroup ids kept per client and server.
const maxDNSCgroups = 16

// dnsTimeout is the tracer's time-out: the resolvers' 5 s whatever the watch (a shorter one would call a slow
// answer lost; a watch shorter than it counts no time-out, and the measurement says the rule cannot tell).
const dnsTimeout = ebpf.DefaultDNSTimeout

// dnsWatch is the DNS tracer running over the agent's read.
type dnsWatch struct {
	t       *ebpf.DNSTracer
	netns   bool   // the tracer's results carry their network namespace, and own is the agent's
	own     uint64 // the agent's network namespace's cookie: the node's, with the host's network
	agg     *ebpf.DNSAggregator
	dir     string
	start   time.Time
	timeout time.Duration
	mu      sync.Mutex
	cgroups map[ebpf.DNSKey][]uint64
	done    chan struct{}
}

// startDNSWatch attaches the DNS tracer to the host's cgroup v2 root (under root, found in proc's pid 1
// mountinfo) and counts its queries until stop; the error says why it cannot.
func startDNSWatch(ctx context.Context, proc, root string) (*dnsWatch, error) {
	dir, err := ebpf.HostCgroupRoot(proc, root)
	if err != nil {
		return nil, err
	}
	w := &dnsWatch{dir: dir, timeout: dnsTimeout, cgroups: map[ebpf.DNSKey][]uint64{}, done: make(chan struct{})}
	if w.t, err = ebpf.StartDNS(ctx, dir, w.timeout); err != nil {
		return nil, err
	}
	if w.t.Netns() {
		w.own, err = ebpf.NetnsCookie()
		w.netns = err == nil // else a kernel before 5.14: loopback clients are taken for the node's, as without
	}
	w.start = time.Now()
	w.agg = ebpf.NewDNSClientAggregator(w.start)
	go func() {
		defer close(w.done)
		for r := range w.t.Events() {
			r.NetnsCookie = w.netnsKey(r)
			w.agg.Add(r)
			k := w.agg.Key(r)
			w.mu.Lock()
			if ids := w.cgroups[k]; len(ids) < maxDNSCgroups && !containsID(ids, r.CgroupID) {
				w.cgroups[k] = append(ids, r.CgroupID)
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// otherNetnsKey is the aggregator's network namespace (DNSKey.NetnsCookie) for a loopback client of another
// namespace than the agent's: those of every such namespace together; every other result is counted under 0.
const otherNetnsKey = 1

// netnsKey is r's network namespace as the agent counts it: only a loopback client needs one (any other
// address is of one namespace, and names its pod or node), and only whether it is the agent's.
func (w *dnsWatch) netnsKey(r ebpf.DNSResult) uint64 {
	if w.netns && r.Client.Addr().Unmap().IsLoopback() && r.NetnsCookie != w.own {
		return otherNetnsKey
	}
	return 0
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// stop detaches the tracer and reports the watch.
func (w *dnsWatch) stop() (*DNSReport, error) {
	end := time.Now()
	err := w.t.Close()
	<-w.done
	stats := w.agg.Snapshot(end)
	rep := NewDNSReport(stats, w.cgroups, end.Sub(w.start), w.timeout)
	rep.Cgroup, rep.Netns = w.dir, w.netns
	rep.UnmatchedAnswers, rep.UntrackedQueries = w.t.Unmatched(), w.t.Untracked()
	return rep, err
}

// NewDNSReport is the report of stats (by client, server and the agent's netnsKey) over window, with the
// cgroup ids seen per key.
func NewDNSReport(stats []ebpf.DNSStats, cgroups map[ebpf.DNSKey][]uint64, window, timeout time.Duration) *DNSReport {
	rep := &DNSReport{WindowSeconds: window.Seconds(), TimeoutSeconds: timeout.Seconds(), Clients: []DNSClient{}}
	for _, s := range stats {
		ids := append([]uint64(nil), cgroups[s.DNSKey]...)
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		rep.Clients = append(rep.Clients, DNSClient{Client: s.Client.String(), Server: s.Server.String(), OtherNetns: s.NetnsCookie == otherNetnsKey, CgroupIDs: ids,
			Queries: s.Queries, Answered: s.Answered, TimedOut: s.TimedOut, Retransmits: s.Retransmits, PerSecond: s.PerSecond,
			NoError: s.NoError, NoData: s.NoData, NXDomain: s.NXDomain, ServFail: s.ServFail, OtherRCode: s.OtherRCode, Truncated: s.Truncated,
			A: s.A, AAAA: s.AAAA, OtherQType: s.OtherQType, P50: s.P50.Seconds(), P99: s.P99.Seconds(), Max: s.Max.Seconds()})
	}
	return rep
}
