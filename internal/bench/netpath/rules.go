package netpath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the network rules read.
var (
	netRatio     = rule.Metric{Result: Name, Name: MetricRatioToHost}
	netMTU       = rule.Metric{Result: Name, Name: MetricMTU}
	netRules     = rule.Metric{Result: Name, Name: MetricKubeProxyRules}
	netConntrack = rule.Metric{Result: Name, Name: MetricConntrackUsage}
	netNeighbour = rule.Metric{Result: Name, Name: MetricNeighbourUsage}
	hopCost      = rule.Metric{Result: Name, Name: MetricHopThroughputCost}
	hopP50       = rule.Metric{Result: Name, Name: MetricHopP50Cost}
	hopP99       = rule.Metric{Result: Name, Name: MetricHopP99Cost}
	mtuExcess    = rule.Metric{Result: MTUName, Name: MetricMTUExcess}
	mtuDFShort   = rule.Metric{Result: MTUName, Name: MetricDFShortfall}
	mtuUnreach   = rule.Metric{Result: MTUName, Name: MetricFragNeededSent}
	mtuFragFails = rule.Metric{Result: MTUName, Name: MetricFragFails}
)

// Rules are the rules over the network path benchmark.
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-NET-POD", Title: "The pod network is slower than the host network", Severity: result.SeverityWarning, Cases: []string{"D", "B"},
		When:    rule.Condition{Metric: netRatio, Op: "<", Value: 0.9, Unit: "ratio"},
		Reads:   []rule.Metric{netMTU, netRules, netConntrack},
		Source:  "k8s-netperf's tolerance: a pod-network result more than 10% below host-to-host on the same nodes",
		Summary: "{{.path}} reaches {{.ratio}} of host->host ({{.conn}}; CNI {{.cni}}, kube-proxy {{.proxy}}): {{.meaning}}. Seen on the nodes: {{.observed}}",
		Remediation: "new connections: kube-proxy's per-connection rule walk and conntrack (iptables mode with many Services -> nftables mode or an eBPF " +
			"datapath; raise nf_conntrack_max); keep-alive and streams: encapsulation and MTU (VXLAN/Geneve overlays: MTU 1450, lost offloads -> native " +
			"routing, jumbo frames or an eBPF datapath); pod->Service only: the Service path itself.",
		Match: netPodMatch,
		// A link the overlay's packets do not fit caps the pod paths (issue 43: 0.0573x of host->host in streams).
		ExplainedBy: []string{"KS-NET-MTU"},
	}, nodenet.ConntrackRule(netConntrack), nodenet.NeighbourRule(netNeighbour), nodenet.MTURuleOver(Name), hopRule()}
}

// mtuProbeRule is KS-NET-MTU over bench mtu's links and DF probe (net.mtu).
func mtuProbeRule() rule.Rule {
	return nodenet.MTURule(rule.Condition{Metric: mtuExcess, Op: ">", Value: 0, Unit: "bytes"},
		[]rule.Condition{{Metric: mtuDFShort, Op: ">", Value: 0, Unit: "bytes"}}, []rule.Metric{mtuUnreach, mtuFragFails}, mtuMatch)
}

// CatalogueRules are the rules net.paths and net.mtu give the findings engine's catalogue (Spec): Rules, with
// KS-NET-MTU over bench mtu's probe (net.mtu). The catalogue makes it an alternative of the node agent's
// KS-NET-MTU (measure.RulesOf); bench net's own (nodenet.MTURuleOver(Name), in Rules) is evaluated by `bench net`.
func CatalogueRules() []rule.Rule {
	rs := Rules()
	for i := range rs {
		if rs[i].ID == "KS-NET-MTU" {
			rs[i] = mtuProbeRule()
		}
	}
	return rs
}

// mtuMatch: one item per pod-path link above the MTU its node's uplink and overlay allow; when every link
// agrees but the DF probe stops short of the pod's MTU, one item for the path (a narrower link between the
// nodes). The DF probe and the ICMP counters are evidence of each.
func mtuMatch(r *result.Report, rl rule.Rule) []rule.Hit {
	also := rl.AlsoOn(mtuDFShort)
	var dfEv []result.Evidence
	dfText := ""
	var short *result.Metric
	for _, m := range mtuDFShort.Samples(r) {
		dfEv = append(dfEv, mtuDFShort.Evidence(m))
		if m.Labels["frag_needed"] != "" {
			dfText = fmt.Sprintf("; a DF probe from the %s to the %s: %s (largest crossing %s bytes; ICMP fragmentation needed: %s)",
				m.Labels["from"], m.Labels["to"], m.Labels["probes"], m.Labels["path_mtu"], m.Labels["frag_needed"])
		}
		if also.Holds(m.Value) {
			short = &m
		}
	}
	var sent []string
	for _, m := range append(mtuUnreach.Samples(r), mtuFragFails.Samples(r)...) {
		dfEv = append(dfEv, rule.EvidenceOf(m, MTUName))
		if m.Value > 0 {
			sent = append(sent, fmt.Sprintf("%s %s +%s", m.Labels["where"], m.Name, result.FormatValue(m.Value)))
		}
	}
	icmp := "the nodes sent no ICMP destination-unreachable and had no fragmentation failure meanwhile (a black hole: the sender never learns)"
	if len(sent) > 0 {
		icmp = "meanwhile " + strings.Join(sent, ", ")
	}
	var hits []rule.Hit
	for _, m := range mtuExcess.Samples(r) {
		if !rl.When.Holds(m.Value) {
			continue
		}
		l := m.Labels
		mtu := result.FormatValue(m.Value + atof(l["expected"]))
		hits = append(hits, rule.Hit{Key: "link=" + l["where"] + "/" + l["iface"], Value: m.Value,
			Evidence: append([]result.Evidence{mtuExcess.Evidence(m)}, dfEv...),
			Vars: map[string]string{"link": fmt.Sprintf("%s of the %s (%s)", l["iface"], l["where"], l["role"]),
				"detail": fmt.Sprintf("MTU %s, %s bytes above the %s it should have (uplink %s minus the overlay's overhead: %s): packets it takes that are larger cannot cross%s; %s",
					mtu, result.FormatValue(m.Value), l["expected"], l["uplink"], l["overlay"], dfText, icmp)}})
	}
	if len(hits) == 0 && short != nil {
		l := short.Labels
		hits = append(hits, rule.Hit{Key: "path=" + l["from"] + "->" + l["to"], Value: short.Value, Evidence: dfEv,
			Vars: map[string]string{"link": fmt.Sprintf("the path from the %s to the %s", l["from"], l["to"]),
				"detail": fmt.Sprintf("packets of at most %s bytes cross with DF set, %s below the pod's MTU %s on %s, while every link on the nodes agrees with its uplink: "+
					"a link between the nodes is narrower; the pods (and the overlay) should be at %s or that link widened. Probes: %s; ICMP fragmentation needed received: %s; %s",
					l["path_mtu"], result.FormatValue(short.Value), l["pod_mtu"], l["iface"], l["path_mtu"], l["probes"], l["frag_needed"], icmp)}})
	}
	return hits
}

func atof(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

var connMeaning = map[string]string{
	"new":       "the cost is per new connection: NAT rules (kube-proxy) and conntrack",
	"keepalive": "the cost is per packet: encapsulation, MTU, the veth/bridge path",
	"stream":    "bulk throughput is capped: encapsulation and MTU, offloads",
}

// netPodMatch: one item per pod path below the tolerance, on its worst connection mode (host paths are the
// baseline).
func netPodMatch(r *result.Report, rl rule.Rule) []rule.Hit {
	res := r.Result(Name)
	worst := map[string]result.Metric{}
	var order []string
	for _, m := range netRatio.Samples(r) {
		p := m.Labels["path"]
		// The ingress paths' cost is the proxy's, which KS-NET-HOP names with its own remedies.
		if p == "host->host" || p == "host->pod" || p == PathIngressSame || p == PathIngressOther || !rl.When.Holds(m.Value) {
			continue
		}
		if w, ok := worst[p]; !ok || m.Value < w.Value {
			if !ok {
				order = append(order, p)
			}
			worst[p] = m
		}
	}
	observed, seen := observedNet(res)
	var hits []rule.Hit
	for _, p := range order {
		m := worst[p]
		hits = append(hits, rule.Hit{Key: "path=" + p, Value: m.Value,
			Evidence: append([]result.Evidence{netRatio.Evidence(m)}, seen...),
			Vars: map[string]string{"path": p, "ratio": result.FormatValue(m.Value) + "x", "conn": m.Labels["conn"],
				"meaning": connMeaning[m.Labels["conn"]], "cni": clusterFact(r, "cni"), "proxy": proxyMode(r, res), "observed": observed},
		})
	}
	return hits
}

func clusterFact(r *result.Report, k string) string {
	if v := r.Cluster.Facts[k]; v != "" {
		return v
	}
	return "unknown"
}

// proxyMode is kube-proxy's mode as the agents read it from kube-proxy, else as discovery guessed it.
func proxyMode(r *result.Report, res *result.Result) string {
	for _, rec := range res.Records {
		if m := rec.Labels["kube_proxy_mode"]; m != "" {
			return m
		}
	}
	return clusterFact(r, "kube-proxy-mode")
}

// observedNet summarises what the agents saw in the namespaces: the pod's MTU, overlay devices, kube-proxy's
// rules, conntrack; and those metrics as evidence.
func observedNet(res *result.Result) (string, []result.Evidence) {
	var parts []string
	var ev []result.Evidence
	for _, m := range res.Metrics {
		switch m.Name {
		case netMTU.Name, netRules.Name, netConntrack.Name:
			ev = append(ev, rule.EvidenceOf(m, Name))
		}
		switch {
		case m.Name == netMTU.Name && m.Labels["where"] == "pod" && m.Labels["iface"] == "eth0":
			parts = append(parts, fmt.Sprintf("pod MTU %s", result.FormatValue(m.Value)))
		case m.Name == netRules.Name && m.Labels["table"] == "nat":
			fam := ""
			if f := m.Labels["family"]; f != "" {
				fam = " (" + f + ")"
			}
			parts = append(parts, fmt.Sprintf("%s kube-proxy NAT rules%s on %s", result.FormatValue(m.Value), fam, m.Labels["where"]))
		case m.Name == netConntrack.Name:
			parts = append(parts, fmt.Sprintf("conntrack %.0f%% full on %s", m.Value*100, m.Labels["where"]))
		}
	}
	for _, rec := range res.Records {
		if ov := rec.Labels["overlay"]; ov != "" && strings.HasPrefix(rec.Labels["where"], "node") {
			parts = append(parts, fmt.Sprintf("overlay %s on %s", ov, rec.Labels["where"]))
		}
	}
	if len(parts) == 0 {
		return "nothing (the node probes did not run or read nothing)", ev
	}
	return strings.Join(parts, "; "), ev
}

// MaxHopCost is the throughput cost (how many times a hop divides the requests/s or Gbit/s of the path without it)
// above which KS-NET-HOP names a hop.
const MaxHopCost = 2

// hopRemedies are the usual remedies of each hop (by Hops' names).
var hopRemedies = map[string]string{
	Hops[0].Name: "routed pod networks instead of encapsulation where the nodes share a link (flannel host-gw, Calico/Cilium native routing), " +
		"jumbo frames on the uplink (the overlay's MTU follows), or an eBPF data path",
	Hops[1].Name: "kube-proxy in nftables or IPVS mode instead of iptables at large rule counts, or an eBPF kube-proxy replacement; " +
		"keep connections alive (the cost is per new connection); raise nf_conntrack_max if conntrack fills",
	Hops[2].Name: "externalTrafficPolicy Local (no second hop, no SNAT), nftables/IPVS or an eBPF kube-proxy replacement",
	HopIngress: "keep clients' connections to the proxy alive, give the proxy CPU (more replicas, no tight CPU limit), run it on the host " +
		"network (no node-port DNAT, no veth) or use an eBPF/Gateway data path, and drop per-request middlewares the route does not need",
	HopIngressOther: "keep backends on the ingress's node (topology-aware routing, the ingress as a DaemonSet with externalTrafficPolicy Local), " +
		"or make the pod network across nodes cheaper (routed instead of VXLAN, jumbo frames)",
}

// hopRule names the hops whose cost is above MaxHopCost, the costliest first, each with its usual remedies.
func hopRule() rule.Rule {
	return rule.Rule{
		ID: "KS-NET-HOP", Title: "A hop of the data path divides throughput", Severity: result.SeverityWarning, Cases: []string{"D"},
		When:  rule.Condition{Metric: hopCost, Op: ">", Value: MaxHopCost, Unit: "ratio"},
		Reads: []rule.Metric{hopP50, hopP99},
		Source: "case D (K3S 17x slower than bare metal in requests/s: Traefik, kube-proxy iptables with conntrack, flannel VXLAN) against " +
			"the kernel's hops measured by bench net on the lab (docs/netlab.md, flannel lab, 2 nodes): the VXLAN overlay across nodes 1.7-1.9x, " +
			"a Service's DNAT and conntrack 1.05-1.2x, a NodePort 1.0-1.5x. Above 2x a hop costs more than the costliest kernel hop measured " +
			"there, as a proxy in user space or a long rule walk does; it is named wherever measured, a healthy cluster included",
		Summary: "{{.hop}} divides throughput by {{.cost}} ({{.conn}} connections: {{.path}} against {{.base}}; latency p50 {{.p50}}, p99 {{.p99}}). " +
			"Usual remedies: {{.remedy}}",
		Remediation: "Per hop: " + strings.Join(func() []string {
			var out []string
			for _, h := range Hops {
				out = append(out, h.Name+": "+hopRemedies[h.Name])
			}
			return out
		}(), "; ") + ".",
		Match: hopMatch,
		// The pod network's hop divides throughput when the overlay's packets do not fit a link (issue 43: 12.7x).
		ExplainedBy: []string{"KS-NET-MTU"},
	}
}

// hopMatch: one item per hop above the threshold, on its costliest connection mode, with its latency costs.
func hopMatch(r *result.Report, rl rule.Rule) []rule.Hit {
	worst := map[string]result.Metric{}
	var order []string
	for _, m := range hopCost.Samples(r) {
		h := m.Labels["hop"]
		if !rl.When.Holds(m.Value) {
			continue
		}
		if w, ok := worst[h]; !ok || m.Value > w.Value {
			if !ok {
				order = append(order, h)
			}
			worst[h] = m
		}
	}
	lat := func(rm rule.Metric, l map[string]string) (string, []result.Evidence) {
		for _, m := range rm.Samples(r) {
			if m.Labels["hop"] == l["hop"] && m.Labels["conn"] == l["conn"] {
				return result.FormatValue(m.Value) + "x", []result.Evidence{rm.Evidence(m)}
			}
		}
		return "not measured", nil
	}
	var hits []rule.Hit
	for _, h := range order {
		m := worst[h]
		p50, e50 := lat(hopP50, m.Labels)
		p99, e99 := lat(hopP99, m.Labels)
		remedy := hopRemedies[h]
		if remedy == "" {
			remedy = "see the remediation"
		}
		hits = append(hits, rule.Hit{Key: "hop=" + h, Value: m.Value,
			Evidence: append(append([]result.Evidence{hopCost.Evidence(m)}, e50...), e99...),
			Vars: map[string]string{"hop": h, "cost": result.FormatValue(m.Value) + "x", "conn": m.Labels["conn"], "path": m.Labels["path"],
				"base": m.Labels["base"], "p50": p50, "p99": p99, "remedy": remedy}})
	}
	return hits
}
