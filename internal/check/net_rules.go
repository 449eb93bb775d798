package check

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/measure/netpath"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// netTolerance is k8s-netperf's: a pod-network result more than 10 % below the host's is a regression.
const netTolerance = 0.9

// NetRules are the rules over the network path benchmark.
func NetRules() []Rule {
	return []Rule{{
		ID: "KS-NET-POD", Title: "The pod network is slower than the host network", Severity: result.SeverityWarning, Cases: []string{"D", "B"},
		Needs: []string{netpath.Name},
		Threshold: result.Threshold{Op: "<", Value: netTolerance, Unit: "ratio",
			Source: "k8s-netperf's tolerance: a pod-network result more than 10% below host-to-host on the same nodes"},
		Summary: "{{.path}} reaches {{.ratio}} of host->host ({{.conn}}; CNI {{.cni}}, kube-proxy {{.proxy}}): {{.meaning}}",
		Remediation: "new connections: kube-proxy's per-connection rule walk and conntrack (iptables mode with many Services -> nftables mode or an eBPF " +
			"datapath; raise nf_conntrack_max); keep-alive and streams: encapsulation and MTU (VXLAN/Geneve overlays: MTU 1450, lost offloads -> native " +
			"routing, jumbo frames or an eBPF datapath); pod->Service only: the Service path itself.",
		Match: netPodMatch,
	}}
}

var connMeaning = map[string]string{
	"new":       "the cost is per new connection: NAT rules (kube-proxy) and conntrack",
	"keepalive": "the cost is per packet: encapsulation, MTU, the veth/bridge path",
	"stream":    "bulk throughput is capped: encapsulation and MTU, offloads",
}

func netPodMatch(r *result.Report) []Hit {
	res := r.Result(netpath.Name)
	worst := map[string]result.Metric{}
	var order []string
	for _, m := range res.Metrics {
		p := m.Labels["path"]
		if m.Name != "ratio_to_host" || p == "host->host" || p == "host->pod" || m.Value >= netTolerance {
			continue
		}
		if w, ok := worst[p]; !ok || m.Value < w.Value {
			if !ok {
				order = append(order, p)
			}
			worst[p] = m
		}
	}
	fact := func(k string) string {
		if v := r.Cluster.Facts[k]; v != "" {
			return v
		}
		return "unknown"
	}
	var hits []Hit
	for _, p := range order {
		m := worst[p]
		hits = append(hits, Hit{
			Evidence: []result.Evidence{{Name: m.Name, Value: m.Value, Unit: m.Unit, Labels: m.Labels, Result: netpath.Name}},
			Vars: map[string]string{"path": p, "ratio": fmt.Sprintf("%sx", report.FormatValue(m.Value)), "conn": m.Labels["conn"],
				"meaning": connMeaning[m.Labels["conn"]], "cni": fact("cni"), "proxy": fact("kube-proxy-mode")},
		})
	}
	return hits
}
