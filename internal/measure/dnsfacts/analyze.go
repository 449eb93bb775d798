package dnsfacts

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Metric names of the result: rules read them through these.
const (
	// MetricReplicas is the number of DNS pods behind the cluster DNS Service.
	MetricReplicas = "replicas"
	// MetricRealNodes is the number of Ready, schedulable, non-simulated nodes (where replicas could go).
	MetricRealNodes = "real_nodes"
	// MetricNodesWithReplicas is how many nodes hold at least one replica.
	MetricNodesWithReplicas = "nodes_with_replicas"
	// MetricReplicasOnNode is the replicas on one node (label node).
	MetricReplicasOnNode = "replicas_on_node"
	// MetricReplicasInZone is the replicas in one zone (label zone), when nodes carry the zone label.
	MetricReplicasInZone = "replicas_in_zone"
	// MetricSpreadProtected is 1 when the pods carry a required or preferred anti-affinity or a topology
	// spread constraint over the node (hostname) or zone key.
	MetricSpreadProtected = "spread_protected"
	// MetricNodeLocalCache is 1 when a NodeLocal DNSCache DaemonSet runs.
	MetricNodeLocalCache = "nodelocal_dnscache"
	// MetricAutoscaler is 1 when an autoscaler (HPA or cluster-proportional-autoscaler) scales the DNS workload.
	MetricAutoscaler = "autoscaler"
	// MetricNodeQueryShare is a node's share of every replica's queries in the window (label node).
	MetricNodeQueryShare = "node_query_share"
	// MetricNodeQueriesPerSecond is the queries per second the replicas of one node answered (label node).
	MetricNodeQueriesPerSecond = "node_queries_per_second"

	// Per replica (labels pod, node), from CoreDNS's own metrics over the window.
	MetricRequestsPerSecond  = "requests_per_second"
	MetricCacheHits          = "cache_hits"
	MetricCacheMisses        = "cache_misses"
	MetricResponses          = "responses"
	MetricErrorShare         = "error_share"
	MetricErrorShareExcess   = "error_share_excess"
	MetricRequestP99         = "request_p99"
	MetricRequestP99VsMedian = "request_p99_vs_median"
	MetricForwardP99         = "forward_p99"
	MetricForwardErrors      = "forward_errors"
	MetricPanics             = "panics"
	// MetricReplicasRead and MetricReplicasUnreadable count the replicas whose metrics were (not) read.
	MetricReplicasRead       = "replicas_metrics_read"
	MetricReplicasUnreadable = "replicas_metrics_unreadable"
)

// MinResponses is the fewest responses of a replica in the window for its error share and latency to be
// compared with the others' (fewer is noise).
const MinResponses = 50

// Facts are what the cluster shows about its DNS: the Service, the workload behind it and its placement.
type Facts struct {
	// Service is "namespace/name" of the cluster DNS Service and ClusterIP its address.
	Service   string
	ClusterIP string
	// Server is "CoreDNS", "kube-dns" or the image when neither; Workload "Deployment ns/name" (or the
	// owner kind), or what serves the Service when no pod does.
	Server   string
	Workload string
	Replicas []Replica
	// Unbacked are endpoint addresses of the Service that no pod owns (a DNS server outside the cluster's
	// pods, as the lab's default process).
	Unbacked []string
	// Protection describes the anti-affinity and topology spread of the pods ("" when none).
	Protection string
	// NodeLocal names the NodeLocal DNSCache DaemonSet ("" when none); Autoscaler the autoscaler.
	NodeLocal  string
	Autoscaler string
	// RealNodes are the Ready, schedulable, non-simulated nodes; Zones maps a node to its zone label.
	RealNodes int
	Zones     map[string]string
	// MetricsSkipped says why no replica's metrics were read (e.g. no pods/proxy permission).
	MetricsSkipped string
	// Window is the time between the two metric scrapes.
	Window time.Duration
}

// Replica is one DNS pod: where it runs and its metrics at the start and end of the window.
type Replica struct {
	Pod, Node, IP string
	Ready         bool
	Before, After *prom.Snapshot
	// Err says why its metrics could not be read.
	Err string
}

// Stats are one replica's numbers over the window, from CoreDNS's metrics.
type Stats struct {
	Requests, Responses, Errors, CacheHits, CacheMisses, ForwardErrors, Panics float64
	Rcodes                                                                     map[string]float64
	RequestP99, ForwardP99                                                     float64
	HasRequestP99, HasForwardP99                                               bool
	// RequestP99Bounds and ForwardP99Bounds are the histogram buckets the p99s were estimated in.
	RequestP99Bounds, ForwardP99Bounds result.Bounds
}

// Families CoreDNS exposes (v1.11+; the forward plugin's older names are read too).
const (
	famRequests     = "coredns_dns_requests_total"
	famResponses    = "coredns_dns_responses_total"
	famDuration     = "coredns_dns_request_duration_seconds"
	famCacheHits    = "coredns_cache_hits_total"
	famCacheMisses  = "coredns_cache_misses_total"
	famCacheReqs    = "coredns_cache_requests_total"
	famProxyDur     = "coredns_proxy_request_duration_seconds"
	famForwardDur   = "coredns_forward_request_duration_seconds"
	famProxyHCFail  = "coredns_proxy_healthcheck_failures_total"
	famForwardHCF   = "coredns_forward_healthcheck_failures_total"
	famForwardHCB   = "coredns_forward_healthcheck_broken_total"
	famForwardMaxCR = "coredns_forward_max_concurrent_rejects_total"
	famPanics       = "coredns_panics_total"
)

// errorRcodes are the answers that mean the server failed the client (not "no such name").
var errorRcodes = map[string]bool{"SERVFAIL": true, "REFUSED": true}

// ReplicaStats reads one replica's window (pure): counter deltas between the two scrapes, and the p99 of
// the request and forward histograms over the window.
func ReplicaStats(before, after *prom.Snapshot) Stats {
	st := Stats{Rcodes: map[string]float64{}}
	sum := func(fam string) float64 {
		v := 0.0
		for _, s := range prom.Delta(before, after, fam) {
			v += s.Value
		}
		return v
	}
	st.Requests = sum(famRequests)
	for _, s := range prom.Delta(before, after, famResponses) {
		st.Responses += s.Value
		st.Rcodes[s.Labels["rcode"]] += s.Value
		if errorRcodes[s.Labels["rcode"]] {
			st.Errors += s.Value
		}
	}
	st.CacheHits = sum(famCacheHits)
	if after.Families[famCacheMisses] != nil {
		st.CacheMisses = sum(famCacheMisses)
	} else if after.Families[famCacheReqs] != nil {
		st.CacheMisses = max(0, sum(famCacheReqs)-st.CacheHits)
	}
	st.Panics = sum(famPanics)
	st.ForwardErrors = sum(famProxyHCFail) + sum(famForwardHCF) + sum(famForwardHCB) + sum(famForwardMaxCR)
	merged := func(fam string, keep func(prom.Labels) bool) *prom.Histogram {
		var h *prom.Histogram
		for _, s := range prom.Delta(before, after, fam) {
			if s.Hist == nil || (keep != nil && !keep(s.Labels)) {
				continue
			}
			if h == nil {
				h = &prom.Histogram{}
			}
			h.Add(s.Hist)
		}
		return h
	}
	if h := merged(famDuration, nil); h != nil {
		e, ok := h.QuantileEstimate(0.99)
		st.RequestP99, st.RequestP99Bounds, st.HasRequestP99 = e.Value, e.Bounds, ok
	}
	fwd := func(l prom.Labels) bool { return l["proxy_name"] == "" || l["proxy_name"] == "forward" }
	h := merged(famProxyDur, fwd)
	if h == nil {
		h = merged(famForwardDur, nil)
	}
	if h != nil {
		e, ok := h.QuantileEstimate(0.99)
		st.ForwardP99, st.ForwardP99Bounds, st.HasForwardP99 = e.Value, e.Bounds, ok
	}
	for _, fam := range []string{famProxyDur, famForwardDur} {
		for _, s := range prom.Delta(before, after, fam) {
			if s.Hist != nil && fwd(s.Labels) && errorRcodes[s.Labels["rcode"]] {
				st.ForwardErrors += s.Hist.Count
			}
		}
	}
	return st
}

// Analyze turns the facts into the result (pure).
func Analyze(f Facts) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, labels ...string) {
		l := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	// bounded marks the metric just added as estimated within a histogram bucket.
	bounded := func(b result.Bounds) { res.Metrics[len(res.Metrics)-1].Bounds = &b }
	facts := result.Record{ID: "cluster-dns", Labels: map[string]string{
		"service": f.Service, "cluster_ip": f.ClusterIP, "server": f.Server, "workload": f.Workload,
		"protection": orNone(f.Protection), "nodelocal_dnscache": orNone(f.NodeLocal), "autoscaler": orNone(f.Autoscaler)}}
	if len(f.Unbacked) > 0 {
		facts.Labels["endpoints_without_pods"] = strings.Join(f.Unbacked, ",")
	}
	if f.MetricsSkipped != "" {
		facts.Labels["metrics"] = "skipped: " + f.MetricsSkipped
	}
	res.Records = append(res.Records, facts)

	add(MetricReplicas, "count", float64(len(f.Replicas)))
	add(MetricRealNodes, "count", float64(f.RealNodes))
	add(MetricSpreadProtected, "bool", b2f(f.Protection != ""))
	add(MetricNodeLocalCache, "bool", b2f(f.NodeLocal != ""))
	add(MetricAutoscaler, "bool", b2f(f.Autoscaler != ""))
	perNode, perZone := map[string]int{}, map[string]int{}
	for _, r := range f.Replicas {
		perNode[r.Node]++
		if z := f.Zones[r.Node]; z != "" {
			perZone[z]++
		}
	}
	add(MetricNodesWithReplicas, "count", float64(len(perNode)))
	for _, n := range slices.Sorted(maps.Keys(perNode)) {
		add(MetricReplicasOnNode, "count", float64(perNode[n]), "node", n)
	}
	for _, z := range slices.Sorted(maps.Keys(perZone)) {
		add(MetricReplicasInZone, "count", float64(perZone[z]), "zone", z)
	}

	// CoreDNS's own metrics, per replica.
	secs := f.Window.Seconds()
	stats := map[string]Stats{}
	read, unreadable := 0, 0
	nodeReqs, total := map[string]float64{}, 0.0
	for _, r := range f.Replicas {
		rec := result.Record{ID: "replica " + r.Pod, Labels: map[string]string{"node": r.Node, "ip": r.IP, "ready": fmt.Sprint(r.Ready)}, Values: map[string]float64{}}
		if z := f.Zones[r.Node]; z != "" {
			rec.Labels["zone"] = z
		}
		switch {
		case f.MetricsSkipped != "":
		case r.Err != "" || r.Before == nil || r.After == nil:
			unreadable++
			rec.Labels["error"] = r.Err
		default:
			read++
			st := ReplicaStats(r.Before, r.After)
			stats[r.Pod] = st
			l := []string{"pod", r.Pod, "node", r.Node}
			if secs > 0 {
				add(MetricRequestsPerSecond, "requests_per_second", st.Requests/secs, l...)
			}
			add(MetricCacheHits, "count", st.CacheHits, l...)
			add(MetricCacheMisses, "count", st.CacheMisses, l...)
			add(MetricResponses, "count", st.Responses, l...)
			add(MetricForwardErrors, "count", st.ForwardErrors, l...)
			add(MetricPanics, "count", st.Panics, l...)
			if st.Responses >= MinResponses {
				add(MetricErrorShare, "ratio", st.Errors/st.Responses, l...)
				if st.HasRequestP99 {
					add(MetricRequestP99, "seconds", st.RequestP99, l...)
					bounded(st.RequestP99Bounds)
				}
			}
			if st.HasForwardP99 {
				add(MetricForwardP99, "seconds", st.ForwardP99, l...)
				bounded(st.ForwardP99Bounds)
			}
			for rc, v := range st.Rcodes {
				rec.Values["rcode_"+rc] = v
			}
			rec.Values["requests"] = st.Requests
			nodeReqs[r.Node] += st.Requests
			total += st.Requests
		}
		res.Records = append(res.Records, rec)
	}
	if f.MetricsSkipped == "" {
		add(MetricReplicasRead, "count", float64(read))
		add(MetricReplicasUnreadable, "count", float64(unreadable))
	}
	if total > 0 {
		for _, n := range slices.Sorted(maps.Keys(nodeReqs)) {
			add(MetricNodeQueryShare, "ratio", nodeReqs[n]/total, "node", n)
			if secs > 0 {
				add(MetricNodeQueriesPerSecond, "requests_per_second", nodeReqs[n]/secs, "node", n)
			}
		}
	}
	// A replica against the others: its error share over their median, its p99 over their median.
	pods := make([]string, 0, len(stats))
	for p := range stats {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	node := map[string]string{}
	for _, r := range f.Replicas {
		node[r.Pod] = r.Node
	}
	if len(pods) >= 2 {
		for _, p := range pods {
			st := stats[p]
			if st.Responses < MinResponses {
				continue
			}
			var errs, p99s []float64
			for _, o := range pods {
				if o == p || stats[o].Responses < MinResponses {
					continue
				}
				errs = append(errs, stats[o].Errors/stats[o].Responses)
				if stats[o].HasRequestP99 {
					p99s = append(p99s, stats[o].RequestP99)
				}
			}
			if len(errs) == 0 {
				continue
			}
			add(MetricErrorShareExcess, "ratio", st.Errors/st.Responses-median(errs), "pod", p, "node", node[p])
			if st.HasRequestP99 && len(p99s) > 0 && median(p99s) > 0 {
				add(MetricRequestP99VsMedian, "ratio", st.RequestP99/median(p99s), "pod", p, "node", node[p])
			}
		}
	}
	if unreadable > 0 {
		res.Reason = fmt.Sprintf("%d of %d DNS replicas' metrics could not be read", unreadable, len(f.Replicas))
	}
	return res
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
