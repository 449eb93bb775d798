package netpath

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// probeNode runs `kubeslow probe node` in an agent pod: the namespace's interfaces, conntrack, ARP table
// and (from host-network pods) kube-proxy.
func (m *Measurement) probeNode(ctx context.Context, env *measure.Env, pod string) (*agent.NodeNet, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return agentproto.Exec(cctx, env.Config, env.Client, env.Namespace, pod, agentproto.ProbeNode{})
}

// NodeNetResult adds what a namespace showed to the result (pure): metrics (MTU of the pod's interfaces and of the
// node's overlay devices, conntrack and ARP fill, kube-proxy's rule count and sync p99) and one record with
// the kube-proxy mode, the overlay and what could not be read.
func NodeNetResult(res *result.Result, where string, n *agent.NodeNet) {
	add := func(name, unit string, v float64, extra ...string) {
		l := map[string]string{"where": where}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	ifaces := n.Overlay()
	if where == "pod" {
		ifaces = n.Interfaces
	}
	for _, i := range ifaces {
		add(MetricMTU, "bytes", float64(i.MTU), "iface", i.Name, "kind", i.Kind)
	}
	if where != "pod" {
		if n.ConntrackEntries >= 0 && n.ConntrackMax > 0 {
			add("conntrack_entries", "count", float64(n.ConntrackEntries))
			add(MetricConntrackUsage, "ratio", float64(n.ConntrackEntries)/float64(n.ConntrackMax))
		}
		if n.Neighbours >= 0 && n.NeighThresh3 > 0 {
			add("neighbours", "count", float64(n.Neighbours))
			add(MetricNeighbourUsage, "ratio", float64(n.Neighbours)/float64(n.NeighThresh3))
		}
		tables := make([]string, 0, len(n.KubeProxyRules))
		for t := range n.KubeProxyRules {
			tables = append(tables, t)
		}
		sort.Strings(tables)
		for _, t := range tables {
			table, family, _ := strings.Cut(t, "/")
			if family != "" {
				add(MetricKubeProxyRules, "count", float64(n.KubeProxyRules[t]), "table", table, "family", family)
			} else {
				add(MetricKubeProxyRules, "count", float64(n.KubeProxyRules[t]), "table", table)
			}
		}
		if n.KubeProxySyncP99 > 0 {
			add("kube_proxy_sync_p99", "seconds", n.KubeProxySyncP99)
		}
	}
	l := map[string]string{"where": where}
	var ov []string
	for _, i := range n.Overlay() {
		ov = append(ov, fmt.Sprintf("%s (%s, MTU %d)", i.Name, i.Kind, i.MTU))
	}
	if len(ov) > 0 {
		l["overlay"] = strings.Join(ov, ", ")
	}
	if n.KubeProxyMode != "" {
		l["kube_proxy_mode"] = n.KubeProxyMode
	}
	if len(n.Unread) > 0 && where != "pod" {
		l["unread"] = strings.Join(n.Unread, "; ")
	}
	l["interfaces"] = strconv.Itoa(len(n.Interfaces))
	res.Records = append(res.Records, result.Record{ID: "net " + where, Labels: l})
}
