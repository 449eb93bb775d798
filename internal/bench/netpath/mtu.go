package netpath

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// MTUName is the MTU check's result name.
const MTUName = "net.mtu"

// Metrics of the MTU check.
const (
	// MetricMTUExcess is a link's MTU minus the MTU it should have (labels where, iface, role, expected,
	// uplink, overlay): above 0 the link sends packets the path cannot carry.
	MetricMTUExcess = "mtu_excess"
	// MetricDFShortfall is the pod's MTU minus the largest packet that crossed to a pod on another node with
	// DF set (labels from, to, pod_mtu, path_mtu): above 0, full-size packets are lost or refused on the way.
	MetricDFShortfall = "df_shortfall"
	// MetricFragNeededSent is the ICMP destination-unreachable messages (type 3: "fragmentation needed" among
	// them) a node sent during the DF probe (label where); MetricFragFails its IP FragFails growth.
	MetricFragNeededSent = "icmp_dest_unreach_sent"
	MetricFragFails      = "ip_frag_fails"
)

// MTUOptions configure the MTU check.
type MTUOptions struct {
	// Image holds the kubeslow binary at /kubeslow.
	Image string
}

// MTUMeasurement compares the MTUs along the pod path (pod eth0, the CNI bridge, the overlay device, the node's
// uplink) with the uplink minus the overlay's overhead, and probes the path between pods on two nodes with DF
// set (agent.RunDFPing), reading the nodes' /proc/net/snmp before and after.
type MTUMeasurement struct{ Opts MTUOptions }

// NewMTU returns the MTU check.
func NewMTU(o MTUOptions) *MTUMeasurement { return &MTUMeasurement{Opts: o} }

// Name implements measure.Measurement.
func (*MTUMeasurement) Name() string { return MTUName }

// Description implements measure.Measurement.
func (*MTUMeasurement) Description() string {
	return "MTUs along the pod path (pod eth0, CNI bridge, overlay, uplink) against the uplink minus the overlay's overhead; DF-set ICMP echoes between pods on two nodes"
}

// MTURules are the rules of `kubeslow bench mtu`: KS-NET-MTU over its links and DF probe (net.mtu).
func MTURules() []rule.Rule { return []rule.Rule{mtuProbeRule()} }

// Run deploys a host-network and a pod-network agent on each of two real nodes, reads their links and counters,
// and probes pod -> pod across the nodes with DF set.
func (m *MTUMeasurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: MTUName, Status: result.StatusPass}
	nodes, err := measure.RealNodes(ctx, env)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to list nodes: %v", err)
		}
		return res, err
	}
	if len(nodes) == 0 {
		return res, measure.Skipf("no Ready, schedulable real node (kwok's simulated nodes carry no traffic)")
	}
	a, b := nodes[0], nodes[0]
	if len(nodes) > 1 {
		b = nodes[1]
	}
	pause := agentproto.Pause{}.Args()
	mk := func(name, node string, hostNet bool) *corev1.Pod {
		p := env.AgentPod(name, m.Opts.Image, node, pause...)
		p.Spec.HostNetwork = hostNet
		return p
	}
	pods := []*corev1.Pod{mk("mtu-host-a", a.Name, true), mk("mtu-pod-a", a.Name, false)}
	if b.Name != a.Name {
		pods = append(pods, mk("mtu-host-b", b.Name, true), mk("mtu-pod-b", b.Name, false))
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			if apierrors.IsForbidden(err) {
				return res, measure.Skipf("no permission to create pods: %v", err)
			}
			return res, fmt.Errorf("creating %s: %w", p.Name, err)
		}
		names[i] = p.Name
	}
	running, err := env.WaitRunning(ctx, names...)
	if err != nil {
		return res, fmt.Errorf("the agents: %w", err)
	}
	probe := func(pod string) (*agent.NodeNet, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return agentproto.Exec(cctx, env.Config, env.Client, env.Namespace, pod, agentproto.ProbeNode{})
	}
	in := MTUInput{NodeA: a.Name, NodeB: b.Name}
	if in.NetA, err = probe("mtu-host-a"); err != nil {
		return res, err
	}
	if in.Pod, err = probe("mtu-pod-a"); err != nil {
		return res, err
	}
	if b.Name == a.Name {
		res.Reason = "one real node: the links are compared, but there is no pod on another node to probe with DF set"
		MTUResult(&res, in)
		return res, nil
	}
	if in.NetB, err = probe("mtu-host-b"); err != nil {
		return res, err
	}
	target := running["mtu-pod-b"].Status.PodIP
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	in.DF, err = agentproto.Exec(cctx, env.Config, env.Client, env.Namespace, "mtu-pod-a", agentproto.DFPing{Target: target, Timeout: 45 * time.Second})
	cancel()
	if err != nil {
		res.Records = append(res.Records, result.Record{ID: "df-ping", Labels: map[string]string{"error": err.Error(), "target": target}})
	}
	if in.AfterA, err = probe("mtu-host-a"); err != nil {
		return res, err
	}
	if in.AfterB, err = probe("mtu-host-b"); err != nil {
		return res, err
	}
	MTUResult(&res, in)
	return res, nil
}

// MTUInput is what the agents read: node A's and node B's namespaces (before and after the DF probe), the
// pod's on node A, and the probe from that pod to a pod on node B.
type MTUInput struct {
	NodeA, NodeB   string
	NetA, NetB     *agent.NodeNet
	AfterA, AfterB *agent.NodeNet
	Pod            *agent.NodeNet
	DF             *agent.DFPing
}

// podPathLinks are a node's links on the pod path besides the uplink: its overlay devices and the CNI's bridge
// (cni0 for the bridge plugin and flannel, cbr0 for kubenet).
func podPathLinks(n *agent.NodeNet) []agent.Iface {
	out := n.Overlay()
	for _, i := range n.Interfaces {
		if i.Kind == "bridge" && (i.Name == "cni0" || i.Name == "cbr0") {
			out = append(out, i)
		}
	}
	return out
}

// MTUResult turns what the agents read into the check's metrics and records (pure).
func MTUResult(res *result.Result, in MTUInput) {
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	type node struct {
		name string
		net  *agent.NodeNet
	}
	var expA int
	for _, nd := range []node{{in.NodeA, in.NetA}, {in.NodeB, in.NetB}} {
		if nd.net == nil || (nd.name == in.NodeB && in.NodeB == in.NodeA) {
			continue
		}
		where := "node " + nd.name
		exp, uplink, overlay, ok := nodenet.ExpectedMTU(nd.net)
		if !ok {
			res.Records = append(res.Records, result.Record{ID: "mtu " + where, Labels: map[string]string{"error": "no default route's interface (uplink) found: the expected MTU is unknown"}})
			continue
		}
		if nd.name == in.NodeA {
			expA = exp
		}
		add(MetricMTU, "bytes", float64(uplink), map[string]string{"where": where, "iface": nd.net.Uplink, "role": "uplink"})
		for _, i := range podPathLinks(nd.net) {
			role := "overlay"
			if i.Kind == "bridge" {
				role = "bridge"
			}
			l := map[string]string{"where": where, "iface": i.Name, "role": role, "kind": i.Kind}
			add(MetricMTU, "bytes", float64(i.MTU), l)
			add(MetricMTUExcess, "bytes", float64(i.MTU-exp), map[string]string{"where": where, "iface": i.Name, "role": role,
				"expected": strconv.Itoa(exp), "uplink": fmt.Sprintf("%s %d", nd.net.Uplink, uplink), "overlay": overlay})
		}
		if nd.name == in.NodeA && in.Pod != nil && expA > 0 {
			for _, i := range in.Pod.Interfaces {
				if i.Name != in.Pod.Uplink {
					continue
				}
				add(MetricMTU, "bytes", float64(i.MTU), map[string]string{"where": "pod on " + nd.name, "iface": i.Name, "role": "pod"})
				add(MetricMTUExcess, "bytes", float64(i.MTU-exp), map[string]string{"where": "pod on " + nd.name, "iface": i.Name, "role": "pod",
					"expected": strconv.Itoa(exp), "uplink": fmt.Sprintf("%s %d", nd.net.Uplink, uplink), "overlay": overlay})
			}
		}
	}
	if df := in.DF; df != nil {
		probes := make([]string, 0, len(df.Probes))
		for _, p := range df.Probes {
			s := fmt.Sprintf("%d ok", p.Bytes)
			if !p.OK {
				s = fmt.Sprintf("%d failed (%s)", p.Bytes, p.Error)
			}
			probes = append(probes, s)
		}
		l := map[string]string{"from": "pod on " + in.NodeA, "to": "pod on " + in.NodeB + " (" + df.Target + ")", "iface": df.Iface,
			"pod_mtu": strconv.Itoa(df.LocalMTU), "path_mtu": strconv.Itoa(df.PathMTU), "probes": strings.Join(probes, ", ")}
		var fn []string
		count := map[string]int{}
		for _, f := range df.FragNeeded {
			k := fmt.Sprintf("MTU %d from %s", f.MTU, f.From)
			if count[k] == 0 {
				fn = append(fn, k)
			}
			count[k]++
		}
		for i, k := range fn {
			fn[i] = fmt.Sprintf("%s (%dx)", k, count[k])
		}
		if len(fn) > 0 {
			l["frag_needed"] = strings.Join(fn, ", ")
		} else {
			l["frag_needed"] = "none received"
		}
		if df.PathMTU == 0 {
			res.Records = append(res.Records, result.Record{ID: "df-ping", Labels: map[string]string{"error": "not even a 68-byte echo crossed: the pod path is down, not narrow (could not measure its MTU)",
				"probes": l["probes"]}})
		} else {
			add(MetricDFShortfall, "bytes", float64(df.LocalMTU-df.PathMTU), l)
		}
		if len(df.Probes) > 1 && df.Probes[1].OK {
			res.Records = append(res.Records, result.Record{ID: "df-ping oversize", Labels: map[string]string{"error": fmt.Sprintf("a %d-byte echo with DF set passed an interface of MTU %d: the probe is not setting DF", df.Probes[1].Bytes, df.LocalMTU)}})
		}
	}
	for _, nd := range []struct {
		name          string
		before, after *agent.NodeNet
	}{{in.NodeA, in.NetA, in.AfterA}, {in.NodeB, in.NetB, in.AfterB}} {
		if nd.before == nil || nd.after == nil || nd.before.Snmp == nil || nd.after.Snmp == nil {
			continue
		}
		l := map[string]string{"where": "node " + nd.name}
		add(MetricFragNeededSent, "count", max(0, nd.after.Snmp.ICMPOutType3-nd.before.Snmp.ICMPOutType3), l)
		add(MetricFragFails, "count", max(0, nd.after.Snmp.IPFragFails-nd.before.Snmp.IPFragFails), l)
	}
}
