package nodeagent

import (
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the node sweep's rules read.
var (
	sweepNeighbour = rule.Metric{Result: Name, Name: MetricNeighbourUsage}
	sweepConntrack = rule.Metric{Result: Name, Name: MetricConntrackUsage}
	sweepKernel    = rule.Metric{Result: Name, Name: MetricKernelLines}
	sweepKernelAge = rule.Metric{Result: Name, Name: MetricKernelNewestAge}
	sweepDState    = rule.Metric{Result: Name, Name: MetricDStatePersistent}
	sweepIOFull    = rule.Metric{Result: Name, Name: MetricIOPressureFullWindow}
	sweepNoSandbox = rule.Metric{Result: Name, Name: MetricSandboxMissing}
	sweepSpinning  = rule.Metric{Result: Name, Name: MetricDiskSpinning}
	sweepSyncP50   = rule.Metric{Result: Name, Name: MetricSyncP50}
	dnsTimeouts    = rule.Metric{Result: Name, Name: MetricDNSTimeouts}
	dnsTimeoutPart = rule.Metric{Result: Name, Name: MetricDNSTimeoutShare}
	dnsQueries     = rule.Metric{Result: Name, Name: MetricDNSQueries}
	connectsSlow   = rule.Metric{Result: Name, Name: MetricTCPConnectsSlow}
	connectsSlowPt = rule.Metric{Result: Name, Name: MetricTCPConnectSlowShare}
	connects       = rule.Metric{Result: Name, Name: MetricTCPConnects}
	connectsFailed = rule.Metric{Result: Name, Name: MetricTCPConnectFailures}
	connectP99     = rule.Metric{Result: Name, Name: MetricTCPConnectLatencyP99}
)

// The thresholds of KS-POD-DNS-TIMEOUT: time-outs in the agent's watch, and their share of the client's queries
// to that server.
const (
	DNSTimeoutMin   = 2
	DNSTimeoutShare = 0.05
)

// dnsTimeoutRule is KS-POD-DNS-TIMEOUT: a pod (or a host-network or unknown client, by its address) whose DNS
// queries to a server went unanswered, named with its node and server.
func dnsTimeoutRule() rule.Rule {
	return rule.Rule{
		ID: "KS-POD-DNS-TIMEOUT", Title: "A pod's DNS queries time out", Severity: result.SeverityWarning, Cases: []string{"B"},
		When:  rule.Condition{Metric: dnsTimeouts, Op: ">=", Value: DNSTimeoutMin, Unit: "count"},
		Also:  []rule.Condition{{Metric: dnsTimeoutPart, Op: ">=", Value: DNSTimeoutShare, Unit: "ratio"}},
		Reads: []rule.Metric{dnsQueries},
		Source: "the node agent's eBPF DNS tracer (docs/ebpf.md): each query of the pod's sockets timed from its first transmission; one " +
			"unanswered for the resolvers' 5 s is a time-out (a watch shorter than that counts none, and the rule is then not evaluated; " +
			"healthy cluster DNS answers in milliseconds). glibc and musl wait 5 s (timeout:5) before they retry, so each time-out is a stall of seconds in the application's " +
			"lookup (getaddrinfo, a connect's name, a client's first request). kubeslow's threshold: 2 or more in the watch (one could be a " +
			"single lost packet) and 5% or more of the pod's queries to that server (a busy client's rare loss stays below)",
		Summary: "{{.who}} on {{.node}}: {{.value}} of its DNS queries to {{.server}} timed out ({{.share}} of {{.queries}} in the agent's watch): " +
			"each one stalls the application's lookup for the resolver's time-out (5 s with glibc and musl)",
		Remediation: "Check the DNS server's health and reachability from that node: conntrack's UDP DNAT race (conntrack_insert_failed rising " +
			"with lookups, kubernetes#56903: NodeLocal DNSCache, or single-request-reopen), CoreDNS's replicas and placement (all on one node, " +
			"overloaded, restarting), a network policy or firewall dropping UDP 53 from that pod or node; then the pod's resolv.conf (ndots, " +
			"search domains multiply the queries that can time out).",
		Match: func(r *result.Report, ru rule.Rule) []rule.Hit {
			hits := clientHits(r, ru, "server")
			for i := range hits {
				labels, v := hits[i].Evidence[0].Labels, hits[i].Vars
				v["share"], v["queries"] = percent(dnsTimeoutPart.In(r, labels)), "?" // Crossing's evidence holds the share already
				if m := dnsQueries.In(r, labels); m != nil {
					v["queries"] = fmt.Sprintf("%.0f", m.Value)
				}
			}
			return hits
		},
	}
}

// clientHits are ru's crossings, each named by its client (a pod, else the kind of client and its address: a
// host-network process, an unknown address) and keyed by client and peer (the label peerKey: the DNS server
// asked, the destination connected to).
func clientHits(r *result.Report, ru rule.Rule, peerKey string) []rule.Hit {
	hits := ru.Crossing(r)
	for i := range hits {
		v := hits[i].Vars
		if v["pod"] != "" {
			v["who"] = "pod " + v["namespace"] + "/" + v["pod"]
			hits[i].Key = "pod=" + v["namespace"] + "/" + v["pod"] + " " + peerKey + "=" + v[peerKey]
		} else {
			v["who"] = v["kind"] + " client " + v["client"]
			hits[i].Key = "client=" + v["node"] + "/" + v["client"] + " " + peerKey + "=" + v[peerKey]
		}
	}
	return hits
}

// percent is m's ratio as a percentage ("" when m is nil).
func percent(m *result.Metric) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*m.Value)
}

// The thresholds of KS-POD-CONNECT-SLOW: connects that waited the SYN's initial RTO in the agent's watch, and their
// share of the client's established connects to that destination.
const (
	ConnectSlowMin   = 2
	ConnectSlowShare = 0.05
)

// connectSlowRule is KS-POD-CONNECT-SLOW: a pod (or a host-network or unknown client) whose TCP connects to a
// destination waited for a retransmitted SYN, named with its node and destination.
func connectSlowRule() rule.Rule {
	return rule.Rule{
		ID: "KS-POD-CONNECT-SLOW", Title: "A pod's TCP connects wait for a retransmitted SYN", Severity: result.SeverityWarning, Cases: []string{"B", "D"},
		When:  rule.Condition{Metric: connectsSlow, Op: ">=", Value: ConnectSlowMin, Unit: "count"},
		Also:  []rule.Condition{{Metric: connectsSlowPt, Op: ">=", Value: ConnectSlowShare, Unit: "ratio"}},
		Reads: []rule.Metric{connects, connectsFailed, connectP99},
		Source: "the node agent's eBPF connect tracer (docs/ebpf.md): each connect of the client's sockets timed from SYN_SENT to ESTABLISHED, as " +
			"its connect(2) waits. One that took 1 s or more waited out the initial retransmission timeout of its SYN (RFC 6298 2.1, Linux's " +
			"TCP_TIMEOUT_INIT): its SYN or the SYN-ACK was lost and sent again (the next tries at 3, 7, 15 s); no path between pods takes a second " +
			"otherwise. kubeslow's threshold: 2 or more in the watch (one could be a single lost packet) and 5% or more of the client's " +
			"established connects to that destination",
		Summary: "{{.who}} on {{.node}}: {{.value}} of its TCP connects to {{.dest}} took 1 s or more ({{.share}} of the {{.established}} established " +
			"in the agent's watch; p99 {{.p99}}): each waited for its SYN to be sent again after the initial RTO",
		Remediation: "Find what drops SYNs between that client and the destination: the server's accept queue overflowing (ListenOverflows and " +
			"ListenDrops rising in `nstat` on the server's node, `ss -ltn` Recv-Q at the listener's backlog: a server too slow to accept, or a " +
			"backlog or net.core.somaxconn too small), a full conntrack table (KS-NODE-CONNTRACK-DROP), SNAT port collisions on the node " +
			"(conntrack insert_failed rising with connects: masquerading without --random-fully), a firewall or NetworkPolicy dropping or " +
			"rate-limiting SYNs, or loss on the path (interface drops, a full neighbour table).",
		Match: func(r *result.Report, ru rule.Rule) []rule.Hit {
			hits := clientHits(r, ru, "dest")
			for i := range hits {
				labels, v := hits[i].Evidence[0].Labels, hits[i].Vars
				v["share"], v["established"], v["p99"] = percent(connectsSlowPt.In(r, labels)), "?", "?"
				if n, f := connects.In(r, labels), connectsFailed.In(r, labels); n != nil && f != nil {
					v["established"] = fmt.Sprintf("%.0f", n.Value-f.Value)
				}
				if m := connectP99.In(r, labels); m != nil {
					v["p99"] = fmt.Sprintf("%.2f s", m.Value)
				}
			}
			return hits
		},
	}
}

// sweepOf is rule r (a rule of internal/measure/nodenet, which bench net's node probes evaluate on the one or two
// nodes the benchmark ran on) evaluated over the node sweep's metric m instead (every real node): the same
// threshold, source and fix.
func sweepOf(r rule.Rule, m rule.Metric, summary string) rule.Rule {
	r.ID += "-ALL"
	r.When.Metric = m
	r.Summary = summary
	r.Reads, r.Match = nil, nil
	return r
}

// kernelClass fires once per node whose kernel log holds lines of class. A node whose newest line of the
// class was logged before the run began (KernelGrace allowed for the agent's read) is past evidence, not a
// current fault: its item is lowered to info and says how old the line is. Where the line's age is unknown
// (a log file without kernel stamps) or the run's start is, the item stands.
func kernelClass(class string) func(r *result.Report, rl rule.Rule) []rule.Hit {
	return func(r *result.Report, rl rule.Rule) []rule.Hit {
		horizon, known := RunHorizon(r)
		var out []rule.Hit
		for _, h := range rl.Crossing(r) {
			if h.Vars["class"] != class {
				continue
			}
			h.Key = "node=" + h.Vars["node"]
			h.Vars["newest"] = newestLine(r, h.Vars["node"], class)
			h.Vars["age"] = ""
			if age := sweepKernelAge.In(r, map[string]string{"node": h.Vars["node"], "class": class}); age != nil {
				h.Evidence = append(h.Evidence, sweepKernelAge.Evidence(*age))
				a := time.Duration(age.Value * float64(time.Second)).Round(time.Second)
				h.Vars["age"] = fmt.Sprintf(", the newest %s before the sweep read it", a)
				if known && a > horizon {
					h.Severity = result.SeverityInfo
					h.Vars["age"] = fmt.Sprintf(", the newest %s before the sweep read it — before this run began: past evidence, not a current fault", a)
				}
			}
			out = append(out, h)
		}
		return out
	}
}

// KernelGrace is how much older than the run a kernel log line may be and still count as the run's: the
// agents read the log some time after the run began.
const KernelGrace = 2 * time.Minute

// RunHorizon is how long before the node sweep's end the run began, plus KernelGrace: kernel lines older than
// that at the sweep's read are older than the run. known is false when the times are not in the report.
func RunHorizon(r *result.Report) (time.Duration, bool) { return Horizon(r, Name, KernelGrace) }

// Horizon is how long before the end of the result named name the run began (the run's start, else the
// result's), plus grace: evidence older than that at the result's read is older than the run. known is false
// when the times are not in the report.
func Horizon(r *result.Report, name string, grace time.Duration) (time.Duration, bool) {
	res := r.Result(name)
	if res == nil || res.End.IsZero() {
		return 0, false
	}
	start := res.Start
	if !r.Start.IsZero() && r.Start.Before(res.End) {
		start = r.Start
	}
	if start.IsZero() || !start.Before(res.End) {
		return 0, false
	}
	return res.End.Sub(start) + grace, true
}

// newestLine is the newest kernel log line of class on node, from the sweep's per-node record.
func newestLine(r *result.Report, node, class string) string {
	if res := r.Result(Name); res != nil {
		for _, rec := range res.Records {
			if rec.ID == "node "+node {
				return rec.Labels["newest "+class]
			}
		}
	}
	return ""
}

// MTURule is KS-NET-MTU over the node sweep's facts (MetricOverlayExcess): every real node's uplink against
// every node's overlay packets. It is one of Rules: the findings engine's catalogue makes it an alternative of
// KS-NET-MTU's other sources (bench mtu's DF probe, bench net's node facts; measure.RulesOf), so that `kubeslow
// run`, whose node sweep reads the nodes' links, names an overlay that does not fit them (see docs/netlab.md).
func MTURule() rule.Rule { return nodenet.MTURuleOver(Name) }

// Rules are the rules over the node sweep (issue 15).
func Rules() []rule.Rule {
	neigh, conntrack := nodenet.NeighbourRule(sweepNeighbour), nodenet.ConntrackRule(sweepConntrack)
	return []rule.Rule{
		sweepOf(neigh, sweepNeighbour, "{{.node}} has {{.value}} of gc_thresh3 neighbour entries: new peers fail to resolve once it is full"),
		sweepOf(conntrack, sweepConntrack, "conntrack on {{.node}} holds {{.value}} of nf_conntrack_max: new connections through kube-proxy's NAT are dropped when it fills"),
		MTURule(),
		dnsTimeoutRule(),
		connectSlowRule(),
		{
			ID: "KS-NODE-NEIGH-OVERFLOW", Title: "The kernel logged \"neighbor table overflow\"", Severity: result.SeverityError, Cases: []string{"B"},
			When:   rule.Condition{Metric: sweepKernel, Op: ">", Value: 0, Unit: "count"},
			Source: "Linux neighbour table: past gc_thresh3 the kernel refuses new entries and logs this line; case B's connects took 30 s and DNS failed",
			Summary: "{{.node}}'s kernel logged {{.value}} \"neighbor table overflow\" lines (newest: {{.newest}}{{.age}}): connections to new peers stall " +
				"until an entry frees",
			Remediation: neigh.Remediation,
			Match:       kernelClass(agent.KernNeighOverflow),
		},
		{
			ID: "KS-NODE-CONNTRACK-DROP", Title: "The kernel dropped packets: conntrack table full", Severity: result.SeverityError, Cases: []string{"B", "D"},
			When:        rule.Condition{Metric: sweepKernel, Op: ">", Value: 0, Unit: "count"},
			Source:      "Linux netfilter logs \"nf_conntrack: table full, dropping packet\" for each new flow refused at nf_conntrack_max",
			Summary:     "{{.node}}'s kernel logged {{.value}} \"nf_conntrack: table full\" lines (newest: {{.newest}}{{.age}}): new connections were dropped",
			Remediation: conntrack.Remediation,
			Match:       kernelClass(agent.KernConntrackFull),
		},
		{
			ID: "KS-NODE-HUNG", Title: "Tasks hung on a node (blocked for more than the hung-task timeout)", Severity: result.SeverityError, Cases: []string{"C"},
			When:   rule.Condition{Metric: sweepKernel, Op: ">", Value: 0, Unit: "count"},
			Source: "Linux hung-task detector: a task in D state past kernel.hung_task_timeout_secs (120 s by default) is logged; case C's udevd and kworkers",
			Summary: "{{.node}}'s kernel logged {{.value}} hung tasks (newest: {{.newest}}{{.age}}): I/O on that node does not complete, so container " +
				"starts and volume operations wait with it",
			Remediation: "Find the device the tasks wait on (the sweep's disks and I/O pressure, iostat -x): a throttled or out-of-credit cloud volume " +
				"(case C: gp2 burst credits -> provisioned IOPS), a failing disk, or a hung network filesystem.",
			Match: kernelClass(agent.KernHungTask),
		},
		{
			ID: "KS-NODE-DSTATE", Title: "Processes stuck in D state (uninterruptible I/O wait)", Severity: result.SeverityWarning, Cases: []string{"C"},
			When: rule.Condition{Metric: sweepDState, Op: ">=", Value: 3, Unit: "count"},
			Source: "kubeslow: three or more processes in D state in every sample of the agent's window (a healthy node's D states last " +
				"milliseconds); case C's node had udevd and kworkers stuck",
			Summary:     "{{.node}} had {{.value}} processes in D state throughout the agent's watch: its I/O is not completing",
			Remediation: "Look at the disk under them (I/O pressure, sync latency in this sweep): a throttled volume, burst credits spent, a failing device.",
		},
		{
			ID: "KS-NODE-IO-PRESSURE", Title: "A node is stalled on I/O (PSI)", Severity: result.SeverityWarning, Cases: []string{"C", "E"},
			When: rule.Condition{Metric: sweepIOFull, Op: ">=", Value: 10, Unit: "percent"},
			Source: "Linux PSI (Documentation/accounting/psi.rst): io \"full\" is the share of time every non-idle task waited on I/O at once; " +
				"here the growth of its stall counter over the agent's own watch (not avg60, which holds the minute before the sweep; from " +
				"Prometheus, its rate over the window); kubeslow's threshold: a tenth of the watch",
			Summary:     "{{.node}}: every runnable task was stalled on I/O {{.value}} of the agent's watch (PSI io full)",
			Remediation: "Find what saturates the node's disk (iotop, the sweep's sync latency); move image and container storage to a faster volume or raise its IOPS.",
		},
		{
			ID: "KS-NODE-DISK-SPINNING", Title: "Spinning disk under the kubelet or the container runtime", Severity: result.SeverityWarning, Cases: []string{"E"},
			When: rule.Condition{Metric: sweepSpinning, Op: ">=", Value: 1, Unit: "bool"},
			Source: "sysfs queue/rotational=1 on a non-virtual device; case E's slow pod creation turned out to be spinning disks on the nodes " +
				"(every image unpack and container start syncs to it)",
			Summary:     "{{.node}}'s {{.role}} directory is on {{.device}} ({{.model}}), a rotational disk",
			Remediation: "Put /var/lib/containerd (or the runtime's root) and /var/lib/kubelet on an SSD; at least keep image layers there.",
		},
		{
			ID: "KS-NODE-DISK-SYNC", Title: "Slow synchronous writes under the kubelet or the container runtime", Severity: result.SeverityWarning, Cases: []string{"E", "C"},
			When: rule.Condition{Metric: sweepSyncP50, Op: ">=", Value: 0.002, Unit: "seconds"},
			Source: "kubeslow: a median write+fdatasync of 2 ms or more is a spinning disk's (half a turn of a 7,200 rpm disk is 4 ms) or a " +
				"throttled volume's; SSDs flush in well under 1 ms",
			Summary:     "write+fdatasync in {{.node}}'s {{.role}} directory ({{.device}}) takes {{.value}} at the median: image unpacking and container starts wait on it",
			Remediation: "Move the runtime's and kubelet's directories to a faster local disk, raise the volume's IOPS, or find what else loads it.",
		},
		{
			ID: "KS-NODE-PAUSE-REMOTE", Title: "The pause (sandbox) image is not on the node: every new pod's sandbox pulls it", Severity: result.SeverityWarning,
			Cases: []string{"B"},
			When:  rule.Condition{Metric: sweepNoSandbox, Op: ">=", Value: 1, Unit: "bool"},
			Source: "the container runtime starts every pod's sandbox from its pause image (containerd's sandbox_image); when the node does not hold " +
				"it (the node's status lists its images) the next sandbox waits for a pull from its registry, and a rate-limited or unreachable " +
				"registry stops every pod start on the node (case B's pause image came from a rate-limited registry)",
			Summary: "{{.node}}'s runtime starts sandboxes from {{.image}}, which the node does not hold: the next pod start pulls it from {{.registry}}",
			Remediation: "Pull the pause image into the node image (or a mirror next to the nodes) and point sandbox_image at it; containerd 1.7+ pins " +
				"the sandbox image against garbage collection, older runtimes and the kubelet's image GC may remove it.",
			Match: func(r *result.Report, ru rule.Rule) []rule.Hit {
				hits := ru.Crossing(r)
				for i := range hits {
					hits[i].Key = "node=" + hits[i].Vars["node"]
				}
				return hits
			},
		},
	}
}
