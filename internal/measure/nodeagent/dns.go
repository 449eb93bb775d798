package nodeagent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The DNS metrics, one sample per node, client and server (labels node, namespace, pod, client, kind, server,
// source): the agent's eBPF DNS tracer over its read (agent.DNSReport).
const (
	MetricDNSQueries          = "dns_queries"
	MetricDNSQueriesPerSecond = "dns_queries_per_second"
	MetricDNSLatencyP50       = "dns_latency_p50_seconds"
	MetricDNSLatencyP99       = "dns_latency_p99_seconds"
	// MetricDNSTimeouts counts the queries unanswered for the agent's time-out (agent.DNSReport.TimeoutSeconds);
	// MetricDNSTimeoutShare is their share of the client's queries to that server.
	MetricDNSTimeouts     = "dns_timeouts"
	MetricDNSTimeoutShare = "dns_timeout_share"
	MetricDNSNXDomain     = "dns_nxdomain"
	MetricDNSServFail     = "dns_servfail"
	MetricDNSNoData       = "dns_nodata"
)

// The kinds of DNS client (label kind): a pod with an IP of its own, a host-network process (the node's
// address, or a host-network pod's), or an address the API does not name (a pod gone since, a node's other
// address): labelled by its address, never guessed.
const (
	DNSClientPod     = "pod"
	DNSClientHost    = "host-network"
	DNSClientUnknown = "unknown"
)

// NoNetnsNote ends a node's dns label when its agent's tracer could not tell network namespaces apart (a
// kernel whose cgroup_skb programs cannot call bpf_get_netns_cookie, or before 5.14): every loopback client
// is then taken for the node's host network, whichever namespace it was in.
const NoNetnsNote = "network namespaces not told apart: every loopback client taken for the node's"

// dnsSource is the metrics' source label: timed in the kernel, as the application sees them.
const dnsSource = "ebpf"

// ListNodePods lists the pods of the cluster in pages of 500, keeping the name, namespace, node, host network
// and IPs of those on nodes (what MarkDNSClients reads).
func ListNodePods(ctx context.Context, env *measure.Env, nodes map[string]bool) ([]corev1.Pod, error) {
	return env.ListPods(ctx, func(p *corev1.Pod) (corev1.Pod, bool) {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
			Status: corev1.PodStatus{PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs}}, nodes[p.Spec.NodeName]
	})
}

// MarkDNSClients names each DNS and TCP-connect client of each host from the pods on its node (status.podIPs)
// and the node's addresses: a pod with a network namespace of its own gets its namespace and name; an address
// of the node's or of a host-network pod's (or a loopback one) is host network (no pod named: they share it);
// any other is unknown, as is a DNS client on loopback that the agent saw in another network namespace than
// the node's (agent.DNSClient.OtherNetns: a pod's own loopback). Nodes that share a kernel (the same boot id:
// the lab's real nodes are network namespaces of one host, kind's are containers) each trace every socket of
// it: a client that is another such node's pod or address is that node's, reported under it only, and a
// loopback one of another network namespace is no more this node's than the others' or the host's (its
// address names none of them): both are dropped here, counted in the report's Elsewhere.
func MarkDNSClients(hosts []agent.NodeHost, pods []corev1.Pod, nodes []corev1.Node) {
	type podRef struct{ ns, name string }
	own := map[string]map[netip.Addr]podRef{}
	host := map[string]map[netip.Addr]bool{}
	addHost := func(node, ip string) {
		if a, err := netip.ParseAddr(ip); err == nil {
			if host[node] == nil {
				host[node] = map[netip.Addr]bool{}
			}
			host[node][a.Unmap()] = true
		}
	}
	for i := range nodes {
		for _, a := range nodes[i].Status.Addresses {
			addHost(nodes[i].Name, a.Address)
		}
	}
	for i := range pods {
		p := &pods[i]
		ips := p.Status.PodIPs
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: p.Status.PodIP}}
		}
		for _, ip := range ips {
			if p.Spec.HostNetwork {
				addHost(p.Spec.NodeName, ip.IP)
				continue
			}
			a, err := netip.ParseAddr(ip.IP)
			if err != nil {
				continue
			}
			if own[p.Spec.NodeName] == nil {
				own[p.Spec.NodeName] = map[netip.Addr]podRef{}
			}
			own[p.Spec.NodeName][a.Unmap()] = podRef{p.Namespace, p.Name}
		}
	}
	classify := func(node, client string, otherNetns bool) (ns, pod, kind string) {
		a, err := netip.ParseAddr(client)
		if err != nil || otherNetns {
			return "", "", DNSClientUnknown
		}
		if p, ok := own[node][a.Unmap()]; ok {
			return p.ns, p.name, DNSClientPod
		}
		if host[node][a.Unmap()] || a.IsLoopback() {
			return "", "", DNSClientHost
		}
		return "", "", DNSClientUnknown
	}
	// The nodes of each kernel whose tracers ran: an unknown client of one that is another's pod or address is
	// the other's, seen through the kernel they share.
	kernel := map[string][]string{}
	for i := range hosts {
		if h := &hosts[i]; h.BootID != "" && (h.DNS != nil || h.Connects != nil) {
			kernel[h.BootID] = append(kernel[h.BootID], h.Node)
		}
	}
	others := func(h *agent.NodeHost) []string {
		if h.BootID == "" || len(kernel[h.BootID]) < 2 {
			return nil
		}
		var out []string
		for _, n := range kernel[h.BootID] {
			if n != h.Node {
				out = append(out, n)
			}
		}
		return out
	}
	theirs := func(shared []string, client string, otherNetns bool) bool {
		if otherNetns && len(shared) > 0 {
			return true
		}
		a, err := netip.ParseAddr(client)
		if err != nil {
			return false
		}
		for _, n := range shared {
			if _, pod := own[n][a.Unmap()]; pod || host[n][a.Unmap()] {
				return true
			}
		}
		return false
	}
	for i := range hosts {
		h := &hosts[i]
		shared := others(h)
		name := func(client string, otherNetns bool) (string, string, string) {
			return classify(h.Node, client, otherNetns)
		}
		elsewhere := func(client string, otherNetns bool) bool { return theirs(shared, client, otherNetns) }
		if d := h.DNS; d != nil {
			d.SharedKernel = shared
			d.Clients, d.Elsewhere = markClients(d.Clients, func(c *agent.DNSClient) (*string, *string, *string, string, bool) {
				return &c.Namespace, &c.Pod, &c.Kind, c.Client, c.OtherNetns
			}, name, elsewhere)
		}
		if r := h.Connects; r != nil { // the connect tracer does not tell network namespaces apart
			r.SharedKernel = shared
			r.Clients, r.Elsewhere = markClients(r.Clients, func(c *agent.ConnectClient) (*string, *string, *string, string, bool) {
				return &c.Namespace, &c.Pod, &c.Kind, c.Client, false
			}, name, elsewhere)
		}
	}
}

// markClients names each client of cs (fields gives its namespace, pod and kind to set, its address and
// whether it is a loopback one of another network namespace) and drops the unknown ones that are not this
// node's on a kernel it shares (elsewhere): the kept clients and how many were dropped.
func markClients[C any](cs []C, fields func(*C) (ns, pod, kind *string, addr string, otherNetns bool), name func(string, bool) (string, string, string),
	elsewhere func(string, bool) bool) ([]C, int) {
	kept, dropped := cs[:0], 0
	for i := range cs {
		ns, pod, kind, addr, otherNetns := fields(&cs[i])
		*ns, *pod, *kind = name(addr, otherNetns)
		if *kind == DNSClientUnknown && elsewhere(addr, otherNetns) {
			dropped++
			continue
		}
		kept = append(kept, cs[i])
	}
	return kept, dropped
}

// dnsMetrics are one host's DNS metrics and its record's DNS label.
func dnsMetrics(node string, d *agent.DNSReport, rec *result.Record) []result.Metric {
	var out []result.Metric
	var ids []string
	for _, c := range d.Clients {
		l := clientLabels(node, c.Namespace, c.Pod, c.Client, c.Kind, "server", c.Server)
		kind := l["kind"]
		add := func(name, unit string, v float64) {
			out = append(out, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
		}
		add(MetricDNSQueries, "count", float64(c.Queries))
		add(MetricDNSQueriesPerSecond, "per_second", c.PerSecond)
		if d.WindowSeconds >= d.TimeoutSeconds { // else no query could time out in the watch: absent, not 0
			add(MetricDNSTimeouts, "count", float64(c.TimedOut))
			if c.Queries > 0 {
				add(MetricDNSTimeoutShare, "ratio", float64(c.TimedOut)/float64(c.Queries))
			}
		}
		add(MetricDNSNXDomain, "count", float64(c.NXDomain))
		add(MetricDNSServFail, "count", float64(c.ServFail))
		add(MetricDNSNoData, "count", float64(c.NoData))
		if c.Answered > 0 {
			add(MetricDNSLatencyP50, "seconds", c.P50)
			add(MetricDNSLatencyP99, "seconds", c.P99)
		}
		if kind != DNSClientPod && len(c.CgroupIDs) > 0 {
			s := make([]string, len(c.CgroupIDs))
			for i, id := range c.CgroupIDs {
				s[i] = fmt.Sprint(id)
			}
			ids = append(ids, fmt.Sprintf("%s (%s) cgroups %s", c.Client, kind, strings.Join(s, ",")))
		}
	}
	rec.Labels["dns"] = fmt.Sprintf("%d clients over %.1fs (eBPF; a query unanswered for %gs is a time-out)", len(d.Clients), d.WindowSeconds, d.TimeoutSeconds)
	if !d.Netns {
		rec.Labels["dns"] += "; " + NoNetnsNote
	}
	if len(d.SharedKernel) > 0 {
		rec.Labels["dns_shared_kernel"] = sharedKernelNote(d.SharedKernel, d.Elsewhere)
	}
	if len(ids) > 0 {
		rec.Labels["dns_other_clients"] = strings.Join(ids, "; ")
	}
	return out
}

// The TCP connect metrics, one sample per node, client and destination (labels node, namespace, pod, client,
// kind, dest, source): the agent's eBPF connect tracer over its read (agent.ConnectReport), SYN_SENT to
// ESTABLISHED as the application's connect(2) waits for it.
const (
	MetricTCPConnects          = "tcp_connects"
	MetricTCPConnectsPerSecond = "tcp_connects_per_second"
	MetricTCPConnectFailures   = "tcp_connect_failures"
	MetricTCPConnectLatencyP50 = "tcp_connect_latency_p50_seconds"
	MetricTCPConnectLatencyP99 = "tcp_connect_latency_p99_seconds"
	// MetricTCPConnectsSlow counts the established connects that took the SYN's initial RTO (1 s) or longer,
	// and MetricTCPConnectSlowShare is their share of the established ones.
	MetricTCPConnectsSlow     = "tcp_connects_slow"
	MetricTCPConnectSlowShare = "tcp_connect_slow_share"
)

// connectMetrics are one host's TCP connect metrics and its record's connects label.
func connectMetrics(node string, r *agent.ConnectReport, rec *result.Record) []result.Metric {
	var out []result.Metric
	for _, c := range r.Clients {
		l := clientLabels(node, c.Namespace, c.Pod, c.Client, c.Kind, "dest", c.Dest)
		add := func(name, unit string, v float64) {
			out = append(out, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
		}
		add(MetricTCPConnects, "count", float64(c.Connects))
		add(MetricTCPConnectsPerSecond, "per_second", c.PerSecond)
		add(MetricTCPConnectFailures, "count", float64(c.Failures))
		if est := c.Connects - c.Failures; est > 0 {
			add(MetricTCPConnectLatencyP50, "seconds", c.P50)
			add(MetricTCPConnectLatencyP99, "seconds", c.P99)
			add(MetricTCPConnectsSlow, "count", float64(c.Slow))
			add(MetricTCPConnectSlowShare, "ratio", float64(c.Slow)/float64(est))
		}
	}
	rec.Labels["connects"] = fmt.Sprintf("%d clients over %.1fs (eBPF)", len(r.Clients), r.WindowSeconds)
	if len(r.SharedKernel) > 0 {
		rec.Labels["connects_shared_kernel"] = sharedKernelNote(r.SharedKernel, r.Elsewhere)
	}
	return out
}

// clientLabels are the labels of a traced client's metrics on node: its name as MarkDNSClients gave it (a
// client it did not name is unknown), its peer under peerKey (the server asked, the destination connected to)
// and the source.
func clientLabels(node, ns, pod, client, kind, peerKey, peer string) map[string]string {
	if kind == "" {
		kind = DNSClientUnknown
	}
	return map[string]string{"node": node, "namespace": ns, "pod": pod, "client": client, "kind": kind, peerKey: peer, "source": dnsSource}
}

// sharedKernelNote says which nodes share this node's kernel and how many clients traced here were left out as
// not this node's (theirs, or loopback ones of another network namespace).
func sharedKernelNote(shared []string, elsewhere int) string {
	return fmt.Sprintf("the kernel is %s's too (one boot id): %d clients seen here left out as not this node's (their pods' and "+
		"addresses', reported under them; loopback ones of other network namespaces)", strings.Join(shared, ", "), elsewhere)
}

// whyNot is why a node's agent reported none of a tracer's data: its unread entry for them (what), or
// otherwise (it did not trace).
func whyNot(unread []string, what, otherwise string) string {
	for _, u := range unread {
		if strings.HasPrefix(u, what+": ") {
			return u
		}
	}
	return otherwise
}
