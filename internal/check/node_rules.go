package check

import (
	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the node sweep's rules read.
var (
	sweepNeighbour = Metric{nodeagent.Name, nodeagent.MetricNeighbourUsage}
	sweepConntrack = Metric{nodeagent.Name, nodeagent.MetricConntrackUsage}
	sweepKernel    = Metric{nodeagent.Name, nodeagent.MetricKernelLines}
	sweepDState    = Metric{nodeagent.Name, nodeagent.MetricDStatePersistent}
	sweepIOFull    = Metric{nodeagent.Name, nodeagent.MetricIOPressureFull}
	sweepSpinning  = Metric{nodeagent.Name, nodeagent.MetricDiskSpinning}
	sweepSyncP50   = Metric{nodeagent.Name, nodeagent.MetricSyncP50}
)

// sweepOf is rule r (one of bench net's node probes, which see the one or two nodes the benchmark ran on)
// evaluated over the node sweep's metric m instead (every real node): the same threshold, source and fix.
func sweepOf(r Rule, m Metric, summary string) Rule {
	r.ID += "-ALL"
	r.When.Metric = m
	r.Summary = summary
	r.Reads, r.Match = nil, nil
	return r
}

// kernelClass fires once per node whose kernel log holds lines of class.
func kernelClass(class string) func(r *result.Report, rule Rule) []Hit {
	return func(r *result.Report, rule Rule) []Hit {
		var out []Hit
		for _, h := range rule.Crossing(r) {
			if h.Vars["class"] == class {
				h.Key = "node=" + h.Vars["node"]
				h.Vars["newest"] = newestLine(r, h.Vars["node"], class)
				out = append(out, h)
			}
		}
		return out
	}
}

// newestLine is the newest kernel log line of class on node, from the sweep's per-node record.
func newestLine(r *result.Report, node, class string) string {
	if res := r.Result(nodeagent.Name); res != nil {
		for _, rec := range res.Records {
			if rec.ID == "node "+node {
				return rec.Labels["newest "+class]
			}
		}
	}
	return ""
}

// NodeRules are the rules over the node sweep (issue 15).
func NodeRules() []Rule {
	var neigh, conntrack Rule
	for _, r := range NetRules() {
		switch r.ID {
		case "KS-NODE-NEIGH":
			neigh = r
		case "KS-NODE-CONNTRACK":
			conntrack = r
		}
	}
	return []Rule{
		sweepOf(neigh, sweepNeighbour, "{{.node}} has {{.value}} of gc_thresh3 neighbour entries: new peers fail to resolve once it is full"),
		sweepOf(conntrack, sweepConntrack, "conntrack on {{.node}} holds {{.value}} of nf_conntrack_max: new connections through kube-proxy's NAT are dropped when it fills"),
		{
			ID: "KS-NODE-NEIGH-OVERFLOW", Title: "The kernel logged \"neighbor table overflow\"", Severity: result.SeverityError, Cases: []string{"B"},
			When:   Condition{Metric: sweepKernel, Op: ">", Value: 0, Unit: "count"},
			Source: "Linux neighbour table: past gc_thresh3 the kernel refuses new entries and logs this line; case B's connects took 30 s and DNS failed",
			Summary: "{{.node}}'s kernel logged {{.value}} \"neighbor table overflow\" lines (newest: {{.newest}}): connections to new peers stall " +
				"until an entry frees",
			Remediation: neigh.Remediation,
			Match:       kernelClass(agent.KernNeighOverflow),
		},
		{
			ID: "KS-NODE-CONNTRACK-DROP", Title: "The kernel dropped packets: conntrack table full", Severity: result.SeverityError, Cases: []string{"B", "D"},
			When:        Condition{Metric: sweepKernel, Op: ">", Value: 0, Unit: "count"},
			Source:      "Linux netfilter logs \"nf_conntrack: table full, dropping packet\" for each new flow refused at nf_conntrack_max",
			Summary:     "{{.node}}'s kernel logged {{.value}} \"nf_conntrack: table full\" lines (newest: {{.newest}}): new connections were dropped",
			Remediation: conntrack.Remediation,
			Match:       kernelClass(agent.KernConntrackFull),
		},
		{
			ID: "KS-NODE-HUNG", Title: "Tasks hung on a node (blocked for more than the hung-task timeout)", Severity: result.SeverityError, Cases: []string{"C"},
			When:   Condition{Metric: sweepKernel, Op: ">", Value: 0, Unit: "count"},
			Source: "Linux hung-task detector: a task in D state past kernel.hung_task_timeout_secs (120 s by default) is logged; case C's udevd and kworkers",
			Summary: "{{.node}}'s kernel logged {{.value}} hung tasks (newest: {{.newest}}): I/O on that node does not complete, so container " +
				"starts and volume operations wait with it",
			Remediation: "Find the device the tasks wait on (the sweep's disks and I/O pressure, iostat -x): a throttled or out-of-credit cloud volume " +
				"(case C: gp2 burst credits -> provisioned IOPS), a failing disk, or a hung network filesystem.",
			Match: kernelClass(agent.KernHungTask),
		},
		{
			ID: "KS-NODE-DSTATE", Title: "Processes stuck in D state (uninterruptible I/O wait)", Severity: result.SeverityWarning, Cases: []string{"C"},
			When: Condition{Metric: sweepDState, Op: ">=", Value: 3, Unit: "count"},
			Source: "kubeslow: three or more processes in D state in every sample of the agent's window (a healthy node's D states last " +
				"milliseconds); case C's node had udevd and kworkers stuck",
			Summary:     "{{.node}} had {{.value}} processes in D state throughout the agent's watch: its I/O is not completing",
			Remediation: "Look at the disk under them (I/O pressure, sync latency in this sweep): a throttled volume, burst credits spent, a failing device.",
		},
		{
			ID: "KS-NODE-IO-PRESSURE", Title: "A node is stalled on I/O (PSI)", Severity: result.SeverityWarning, Cases: []string{"C", "E"},
			When: Condition{Metric: sweepIOFull, Op: ">=", Value: 10, Unit: "percent"},
			Source: "Linux PSI (Documentation/accounting/psi.rst): io \"full\" is the share of time every non-idle task waited on I/O at once; " +
				"kubeslow's threshold: a tenth of the last minute",
			Summary:     "{{.node}}: every runnable task was stalled on I/O {{.value}} of the last minute (PSI io full avg60)",
			Remediation: "Find what saturates the node's disk (iotop, the sweep's sync latency); move image and container storage to a faster volume or raise its IOPS.",
		},
		{
			ID: "KS-NODE-DISK-SPINNING", Title: "Spinning disk under the kubelet or the container runtime", Severity: result.SeverityWarning, Cases: []string{"E"},
			When: Condition{Metric: sweepSpinning, Op: ">=", Value: 1, Unit: "bool"},
			Source: "sysfs queue/rotational=1 on a non-virtual device; case E's slow pod creation turned out to be spinning disks on the nodes " +
				"(every image unpack and container start syncs to it)",
			Summary:     "{{.node}}'s {{.role}} directory is on {{.device}} ({{.model}}), a rotational disk",
			Remediation: "Put /var/lib/containerd (or the runtime's root) and /var/lib/kubelet on an SSD; at least keep image layers there.",
		},
		{
			ID: "KS-NODE-DISK-SYNC", Title: "Slow synchronous writes under the kubelet or the container runtime", Severity: result.SeverityWarning, Cases: []string{"E", "C"},
			When: Condition{Metric: sweepSyncP50, Op: ">=", Value: 0.002, Unit: "seconds"},
			Source: "kubeslow: a median write+fdatasync of 2 ms or more is a spinning disk's (half a turn of a 7,200 rpm disk is 4 ms) or a " +
				"throttled volume's; SSDs flush in well under 1 ms",
			Summary:     "write+fdatasync in {{.node}}'s {{.role}} directory ({{.device}}) takes {{.value}} at the median: image unpacking and container starts wait on it",
			Remediation: "Move the runtime's and kubelet's directories to a faster local disk, raise the volume's IOPS, or find what else loads it.",
		},
	}
}

// The metrics the kubelet rules read.
var (
	kubeletSerial     = Metric{kubelet.Name, kubelet.MetricSerializePulls}
	kubeletLargest    = Metric{kubelet.Name, kubelet.MetricLargestImage}
	kubeletStartRatio = Metric{kubelet.Name, kubelet.MetricPodStartVsMedian}
	kubeletStartP99   = Metric{kubelet.Name, kubelet.MetricPodStartP99}
)

// KubeletRules are the rules over the kubelets' settings and metrics read through the node proxy.
func KubeletRules() []Rule {
	return []Rule{{
		ID: "KS-NODE-SERIAL-PULLS", Title: "Serialized image pulls with large images", Severity: result.SeverityWarning, Cases: []string{"B"},
		When: Condition{Metric: kubeletSerial, Op: ">=", Value: 1, Unit: "bool"},
		Also: []Condition{{Metric: kubeletLargest, Op: ">=", Value: 1 << 30, Unit: "bytes"}},
		Source: "kubelet serializeImagePulls (default true): one pull at a time per node; case B's 17 GB image blocked every other pull " +
			"behind it. kubeslow's threshold: an image of 1 GiB or more on the node",
		Summary: "{{.node}} pulls one image at a time (serializeImagePulls: true) and holds images up to {{.largest_image_bytes}}: " +
			"a small image's pull waits behind a large one",
		Remediation: "Set serializeImagePulls: false with maxParallelImagePulls (e.g. 5) in the kubelet configuration; preload large images " +
			"(a DaemonSet or the node image) or pull them from a local mirror.",
	}, {
		ID: "KS-NODE-START-OUTLIER", Title: "A node's kubelet starts pods much slower than the others", Severity: result.SeverityWarning, Cases: []string{"E"},
		When: Condition{Metric: kubeletStartRatio, Op: ">=", Value: 3, Unit: "ratio"},
		Also: []Condition{{Metric: kubeletStartP99, Op: ">=", Value: 5, Unit: "seconds"}},
		Source: "the pod start-up SLI (kubelet_pod_start_sli_duration_seconds, image pulls excluded) p99 < 5 s; a node at 3x the " +
			"nodes' median is an outlier (kubeslow)",
		Summary: "{{.node}}'s kubelet pod-start SLI p99 is {{.pod_start_sli_p99}}, {{.value}} times the nodes' median: something on that node " +
			"(disk, runtime, CNI) is slow",
		Remediation: "Look at that node's disk (nodes.agent: sync latency, spinning disk, I/O pressure), its runtime operation latency and " +
			"errors, and its CNI; drain it if it cannot be fixed at once.",
	}}
}
