package nodeagent

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Metric names of the result (labels: node, and role/device for disks, class for kernel lines): rules read
// them through these.
const (
	MetricNodesReported = "nodes_reported"
	MetricNodesFailed   = "nodes_failed"
	// MetricAgentsScheduled is the DaemonSet's desired count (one per real, schedulable-for-it node).
	MetricAgentsScheduled = "agents_scheduled"
	// MetricNeighbourUsage is IPv4 neighbours over gc_thresh3; MetricNeighbourSoftUsage over gc_thresh2.
	MetricNeighbourUsage     = "neighbour_usage"
	MetricNeighbourSoftUsage = "neighbour_soft_usage"
	MetricConntrackUsage     = "conntrack_usage"
	// MetricConntrackInsertFailed and MetricConntrackDrop are conntrack's insert_failed and drop counters
	// (summed over the CPUs) since boot; the _window metrics their growth over the agent's watch (label node).
	MetricConntrackInsertFailed       = "conntrack_insert_failed"
	MetricConntrackDrop               = "conntrack_drop"
	MetricConntrackInsertFailedWindow = "conntrack_insert_failed_window"
	MetricConntrackDropWindow         = "conntrack_drop_window"
	// MetricKernelLines counts the kernel log lines of a class (label class: agent.Kern*).
	MetricKernelLines = "kernel_lines"
	// MetricKernelNewestAge is how long before the agent's read the newest line of a class was logged (from
	// /dev/kmsg's stamps, or a log file's kernel stamps against the uptime; absent when unknown).
	MetricKernelNewestAge = "kernel_newest_age_seconds"
	// MetricOOMKills counts the OOM killer's kills in the kernel log by node, pod UID (from the killed task's
	// cgroup; "" outside a pod) and scope (agent.OOMScope*), with the newest kill's task and oom_memcg as
	// labels; MetricOOMKillNewestAge is how long before the agent's read the newest of them was logged.
	MetricOOMKills         = "oom_kills"
	MetricOOMKillNewestAge = "oom_kill_newest_age_seconds"
	// MetricDStatePersistent counts the processes in D state in every sample of the agent's window.
	MetricDStatePersistent = "d_state_persistent"
	MetricDStateMax        = "d_state_max"
	// MetricIOPressureFullWindow is PSI io "full" over the agent's own watch (the growth of the kernel's
	// stall counter), in percent of wall time: what the rule reads, since avg60 holds the minute before.
	MetricIOPressureFullWindow = "io_pressure_full_window"
	MetricIOPressureSomeWindow = "io_pressure_some_window"
	// Pressure (PSI) averages over 60 s, in percent of wall time (reported).
	MetricIOPressureFull  = "io_pressure_full_avg60"
	MetricIOPressureSome  = "io_pressure_some_avg60"
	MetricCPUPressureSome = "cpu_pressure_some_avg60"
	MetricMemPressureFull = "memory_pressure_full_avg60"
	// MetricSyncP50 and MetricSyncP99 are the write+fdatasync latencies in a role's directory.
	MetricSyncP50 = "sync_p50"
	MetricSyncP99 = "sync_p99"
	// MetricDiskSpinning is 1 for a rotational disk that is not a virtual one (virtio/xen disks report
	// rotational=1 whatever backs them).
	MetricDiskSpinning = "disk_spinning"
	MetricCPUs         = "cpus"
	// MetricSandboxMissing is 1 when the runtime's pause image is not on the node (its status's complete
	// image list lacks it), 0 when it is (labels: node, image, registry); absent when unknown.
	MetricSandboxMissing = "sandbox_image_missing"
	MetricLoadPerCPU     = "load1_per_cpu"
	MetricMemAvailable   = "mem_available_ratio"
	// MetricOverlayExcess is how many bytes the cluster's largest overlay packet exceeds a node's uplink MTU
	// (nodenet.OverlayFit; labels node, iface, mtu, overlay, senders, fit, narrowest).
	MetricOverlayExcess = nodenet.MetricOverlayExcess
)

// virtualDrivers report rotational=1 unless told otherwise: the flag says nothing of the backing store.
var virtualDrivers = map[string]bool{"virtio_blk": true, "xen_blkfront": true}

// Spinning says whether d is a spinning disk as far as the kernel can tell.
func Spinning(d agent.BlockDev) bool {
	return d.Rotational && !d.Virtual && !virtualDrivers[d.Driver] && !strings.HasPrefix(d.Name, "vd") && !strings.HasPrefix(d.Name, "xvd")
}

// Analyze turns the agents' reports (and the nodes whose agent failed, with why) into the result (pure).
func Analyze(hosts []agent.NodeHost, failures map[string]string) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, labels ...string) {
		l := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	for _, h := range hosts {
		n := h.Node
		rec := result.Record{ID: "node " + n, Labels: map[string]string{}, Values: map[string]float64{}}
		if nn := h.Net; nn != nil {
			if nn.Neighbours >= 0 && nn.NeighThresh3 > 0 {
				add(MetricNeighbourUsage, "ratio", float64(nn.Neighbours)/float64(nn.NeighThresh3), "node", n)
				rec.Labels["neighbours"] = fmt.Sprintf("%d (gc_thresh1/2/3 %d/%d/%d)", nn.Neighbours, nn.NeighThresh1, nn.NeighThresh2, nn.NeighThresh3)
			}
			if nn.Neighbours >= 0 && nn.NeighThresh2 > 0 {
				add(MetricNeighbourSoftUsage, "ratio", float64(nn.Neighbours)/float64(nn.NeighThresh2), "node", n)
			}
			if st := nn.ConntrackStat; st != nil {
				add(MetricConntrackInsertFailed, "count", float64(st[agent.ConntrackInsertFailed]), "node", n)
				add(MetricConntrackDrop, "count", float64(st[agent.ConntrackDrop]), "node", n)
			}
			if w := nn.ConntrackStatWindow; w != nil {
				add(MetricConntrackInsertFailedWindow, "count", float64(w[agent.ConntrackInsertFailed]), "node", n)
				add(MetricConntrackDropWindow, "count", float64(w[agent.ConntrackDrop]), "node", n)
			}
			if nn.ConntrackEntries >= 0 && nn.ConntrackMax > 0 {
				add(MetricConntrackUsage, "ratio", float64(nn.ConntrackEntries)/float64(nn.ConntrackMax), "node", n)
				rec.Labels["conntrack"] = fmt.Sprintf("%d of %d", nn.ConntrackEntries, nn.ConntrackMax)
			}
		}
		if k := h.Kernel; k != nil {
			rec.Labels["kernel_log"] = fmt.Sprintf("%s, %d lines", k.Source, k.Lines)
			for _, c := range agent.KernelClasses {
				add(MetricKernelLines, "count", float64(k.Counts[c]), "node", n, "class", c)
				if k.Counts[c] > 0 {
					rec.Labels["newest "+c] = k.Newest[c]
					if ago, ok := k.NewestAgoSeconds[c]; ok {
						add(MetricKernelNewestAge, "seconds", ago, "node", n, "class", c)
					}
				}
			}
			res.Metrics = append(res.Metrics, oomMetrics(n, k.OOMKills)...)
		}
		if d := h.DState; d != nil {
			add(MetricDStatePersistent, "count", float64(d.Persistent), "node", n)
			add(MetricDStateMax, "count", float64(d.Max), "node", n)
			var procs []string
			for _, p := range d.Procs {
				procs = append(procs, fmt.Sprintf("%s[%d] %.1fs", p.Comm, p.PID, p.Seconds))
			}
			if len(procs) > 0 {
				rec.Labels["d_state"] = fmt.Sprintf("%s (window %.1fs)", strings.Join(procs, ", "), d.WindowSeconds)
			}
		}
		if p, ok := h.PSI["io"]; ok {
			if p.WindowSeconds > 0 {
				add(MetricIOPressureFullWindow, "percent", p.FullWindow, "node", n)
				add(MetricIOPressureSomeWindow, "percent", p.SomeWindow, "node", n)
			}
			add(MetricIOPressureFull, "percent", p.FullAvg60, "node", n)
			add(MetricIOPressureSome, "percent", p.SomeAvg60, "node", n)
		}
		if p, ok := h.PSI["cpu"]; ok {
			add(MetricCPUPressureSome, "percent", p.SomeAvg60, "node", n)
		}
		if p, ok := h.PSI["memory"]; ok {
			add(MetricMemPressureFull, "percent", p.FullAvg60, "node", n)
		}
		if sb := h.Sandbox; sb != nil {
			rec.Labels["sandbox_image"] = sb.Image + " (" + sb.Source + ")"
			if sb.Present != nil {
				res.Metrics = append(res.Metrics, result.Metric{Name: MetricSandboxMissing, Unit: "bool", Value: b2f(!*sb.Present),
					Labels: map[string]string{"node": n, "image": sb.Image, "registry": registryOf(sb.Image)}})
			}
		}
		devOf := map[string]agent.BlockDev{}
		for _, d := range h.Disks {
			devOf[d.Role] = d
			spin := 0.0
			if Spinning(d) {
				spin = 1
			}
			if !d.Virtual {
				add(MetricDiskSpinning, "bool", spin, "node", n, "role", d.Role, "device", d.Name, "model", d.Model)
			}
			rec.Labels["disk "+d.Role] = diskText(d)
		}
		for _, s := range h.Sync {
			dev := devOf[s.Role].Name
			add(MetricSyncP50, "seconds", s.P50, "node", n, "role", s.Role, "device", dev)
			add(MetricSyncP99, "seconds", s.P99, "node", n, "role", s.Role, "device", dev)
		}
		if h.CPUs > 0 {
			add(MetricCPUs, "count", float64(h.CPUs), "node", n)
			if h.Load != nil {
				add(MetricLoadPerCPU, "ratio", h.Load.Load1/float64(h.CPUs), "node", n)
			}
		}
		if h.MemTotal > 0 {
			add(MetricMemAvailable, "ratio", float64(h.MemAvailable)/float64(h.MemTotal), "node", n)
		}
		if h.DNS != nil {
			res.Metrics = append(res.Metrics, dnsMetrics(n, h.DNS, &rec)...)
			if h.DNS.WindowSeconds < h.DNS.TimeoutSeconds {
				res.Absent = append(res.Absent, result.Absence{Metric: MetricDNSTimeouts, Series: "node " + n,
					Reason: fmt.Sprintf("the agent traced DNS for %.1f s, less than a resolver's time-out (%g s): no query could time out in it (the node agent's watch, 2 s by default)",
						h.DNS.WindowSeconds, h.DNS.TimeoutSeconds)})
			}
		} else {
			// Could not measure (no eBPF there): KS-POD-DNS-TIMEOUT says so rather than clear.
			res.Absent = append(res.Absent, result.Absence{Metric: MetricDNSTimeouts, Series: "node " + n,
				Reason: whyNot(h.Unread, agent.DNSUnread, "the agent did not trace DNS queries (an agent without --dns)")})
		}
		if h.Connects != nil {
			res.Metrics = append(res.Metrics, connectMetrics(n, h.Connects, &rec)...)
		} else {
			// Could not measure: KS-POD-CONNECT-SLOW says so rather than clear.
			res.Absent = append(res.Absent, result.Absence{Metric: MetricTCPConnectsSlow, Series: "node " + n,
				Reason: whyNot(h.Unread, agent.ConnectsUnread, "the agent did not trace TCP connects (an agent without --dns)")})
		}
		if len(h.Unread) > 0 {
			rec.Labels["unread"] = strings.Join(h.Unread, "; ")
		}
		rec.Values["took_seconds"] = h.TookSeconds
		res.Records = append(res.Records, rec)
	}
	nodes := make([]string, 0, len(failures))
	for n := range failures {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		res.Records = append(res.Records, result.Record{ID: "node " + n, Labels: map[string]string{"error": failures[n]}})
	}
	// Whether every node's uplink carries the overlay's packets (KS-NET-MTU over MetricOverlayExcess): every
	// node's overlay against every node's uplink, from the interfaces the agents read.
	links := make([]nodenet.NodeLinks, 0, len(hosts)+len(nodes))
	for _, h := range hosts {
		links = append(links, nodenet.NodeLinks{Node: h.Node, Net: h.Net, Why: "the agent read no network facts"})
	}
	for _, n := range nodes {
		links = append(links, nodenet.NodeLinks{Node: n, Why: "the agent did not report: " + failures[n]})
	}
	nodenet.OverlayFit(&res, links)
	add(MetricNodesReported, "count", float64(len(hosts)))
	add(MetricNodesFailed, "count", float64(len(failures)))
	if len(failures) > 0 {
		res.Reason = fmt.Sprintf("%d of %d node agents did not report", len(failures), len(failures)+len(hosts))
		if len(hosts) == 0 {
			res.Status = result.StatusError
		}
	}
	return res
}

func diskText(d agent.BlockDev) string {
	if d.Virtual {
		return fmt.Sprintf("%s on no block device (%s)", d.Dir, d.FSType)
	}
	rot := "non-rotational"
	if d.Rotational {
		rot = "rotational"
	}
	s := fmt.Sprintf("%s on %s (%s) %s, scheduler %s, %s GiB", d.Dir, d.Name, d.Dev, rot, d.Scheduler, strconv.FormatFloat(float64(d.SizeBytes)/(1<<30), 'f', 0, 64))
	if d.Model != "" {
		s += ", " + d.Model
	}
	if d.Driver != "" {
		s += ", driver " + d.Driver
	}
	return s
}

// oomMetrics are a node's OOM kills grouped by pod UID and scope: their count, and the newest one's age,
// task and oom_memcg.
func oomMetrics(node string, kills []agent.OOMKill) []result.Metric {
	type group struct {
		n      int
		newest agent.OOMKill
	}
	groups := map[[2]string]*group{}
	var keys [][2]string
	for _, k := range kills {
		key := [2]string{k.PodUID, k.Scope()}
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
			keys = append(keys, key)
		}
		g.n++
		g.newest = k // kills come oldest first
	}
	var out []result.Metric
	for _, key := range keys {
		g := groups[key]
		l := map[string]string{"node": node, "pod_uid": key[0], "scope": key[1], "task": g.newest.Task, "oom_memcg": g.newest.OOMMemcg,
			"container_id": g.newest.ContainerID}
		out = append(out, result.Metric{Name: MetricOOMKills, Unit: "count", Value: float64(g.n), Labels: l})
		if g.newest.AgoSeconds >= 0 {
			out = append(out, result.Metric{Name: MetricOOMKillNewestAge, Unit: "seconds", Value: g.newest.AgoSeconds, Labels: l})
		}
	}
	return out
}
