// Package netpathtest is net.paths' summary of scripted path samples and node readings: the fixtures of its
// rules.
package netpathtest

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Run is a network benchmark's paths and a node's tables.
type Run struct {
	PodRatio                  float64 // pod->pod other node over host->host, new connections
	ConntrackFill, Neighbours float64
	// IngressCost is the ingress proxy's throughput cost against host->host (0: no ingress paths).
	IngressCost float64
	// StreamRatio, when set, is every pod path's bulk throughput (stream) over host->host's (a capped overlay).
	StreamRatio float64
	// Links are the node probes' facts of the run's nodes (nil: none, OverlayFit not run).
	Links []nodenet.NodeLinks
}

// Result is netpath's summary of the run's samples and node readings.
func (n Run) Result() result.Result {
	res := result.Result{Name: netpath.Name, Status: result.StatusPass}
	paths := []netpath.Path{{Name: "host->host"}, {Name: "host->pod"}, {Name: "pod->pod other node"}, {Name: "pod->Service"}}
	if n.IngressCost > 0 {
		paths = append(paths, netpath.Path{Name: netpath.PathIngressSame}, netpath.Path{Name: netpath.PathIngressOther})
	}
	samples := map[string][]float64{}
	for _, p := range paths {
		f := 0.97
		switch p.Name {
		case "host->host":
			f = 1
		case netpath.PathIngressSame, netpath.PathIngressOther:
			f = 1 / n.IngressCost
		}
		nf := f
		if p.Name == "pod->pod other node" {
			nf = n.PodRatio
		}
		for _, r := range []float64{0.98, 1, 1.02} {
			samples[netpath.SampleKey(p.Name, "rps", "keepalive")] = append(samples[netpath.SampleKey(p.Name, "rps", "keepalive")], 20000*f*r)
			samples[netpath.SampleKey(p.Name, "rps", "new")] = append(samples[netpath.SampleKey(p.Name, "rps", "new")], 5000*nf*r)
			for _, q := range []struct {
				metric string
				s      float64
			}{{"latency_p50", 0.0005}, {"latency_p99", 0.002}} {
				samples[netpath.SampleKey(p.Name, q.metric, "keepalive")] = append(samples[netpath.SampleKey(p.Name, q.metric, "keepalive")], q.s/f*r)
				samples[netpath.SampleKey(p.Name, q.metric, "new")] = append(samples[netpath.SampleKey(p.Name, q.metric, "new")], 4*q.s/nf*r)
			}
			sf := f
			if n.StreamRatio > 0 && p.Name != "host->host" && p.Name != "host->pod" {
				sf = n.StreamRatio
			}
			samples[netpath.SampleKey(p.Name, "stream_gbit", "stream")] = append(samples[netpath.SampleKey(p.Name, "stream_gbit", "stream")], 9*sf*r)
		}
	}
	netpath.Summarize(&res, paths, samples)
	netpath.HopCosts(&res, samples)
	netpath.NodeNetResult(&res, "node n1", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "flannel.1", MTU: 1450, Kind: "vxlan"}},
		ConntrackEntries: int64(n.ConntrackFill * 262144), ConntrackMax: 262144, Neighbours: int64(n.Neighbours * 1024), NeighThresh3: 1024,
		KubeProxyMode: "iptables", KubeProxyRules: map[string]int64{"nat": 40123}})
	netpath.NodeNetResult(&res, "pod", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "eth0", MTU: 1450}}, ConntrackEntries: -1, Neighbours: -1})
	if n.Links != nil {
		nodenet.OverlayFit(&res, n.Links)
	}
	return res
}

func net(n Run) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, n.Result()) }
}

// RuleFixtures are netpath.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	healthy := Run{PodRatio: 0.95, ConntrackFill: 0.1, Neighbours: 0.05}
	return map[string]ruletest.Fixture{
		"KS-NET-POD":        {Fire: net(Run{PodRatio: 0.06, ConntrackFill: 0.1}), Clear: net(healthy)},
		"KS-NODE-CONNTRACK": {Fire: net(Run{PodRatio: 0.95, ConntrackFill: 0.93}), Clear: net(healthy)},
		"KS-NODE-NEIGH":     {Fire: net(Run{PodRatio: 0.95, Neighbours: 0.85}), Clear: net(healthy)},
		"KS-NET-MTU":        {Fire: mtu(MTUPodWrong), Clear: mtu(MTUHealthyFlannel)},
		"KS-NET-HOP":        {Fire: net(Run{PodRatio: 0.95, ConntrackFill: 0.1, IngressCost: 5}), Clear: net(Run{PodRatio: 0.95, ConntrackFill: 0.1, IngressCost: 1.5})},
	}
}

// MTURun is what the MTU check's agents read on a two-node lab: the overlay (none, or flannel's VXLAN), the
// pods' MTU, and the largest packet the DF probe got across (0: the pod's MTU crossed).
type MTURun struct {
	Overlay bool
	PodMTU  int
	PathMTU int
	// FragNeeded: flannel.1 refused the pod's full-size packets with ICMP fragmentation needed.
	FragNeeded bool
}

// nodeNet is a node's namespace: eth0 at 1500, cni0 at the pods' MTU, flannel.1 at 1450 with the overlay.
func (m MTURun) nodeNet(icmpOut float64) *agent.NodeNet {
	n := &agent.NodeNet{Uplink: "eth0", Interfaces: []agent.Iface{{Name: "eth0", MTU: 1500, Up: true}, {Name: "cni0", MTU: m.PodMTU, Kind: "bridge", Up: true}},
		Snmp: &agent.SnmpCounters{ICMPOutType3: icmpOut}}
	if m.Overlay {
		n.Interfaces = append(n.Interfaces, agent.Iface{Name: "flannel.1", MTU: 1450, Kind: "vxlan", Up: true})
	}
	return n
}

// Input is the agents' readings.
func (m MTURun) Input() netpath.MTUInput {
	sent := 0.0
	df := &agent.DFPing{Target: "198.18.2.5", LocalMTU: m.PodMTU, Iface: "eth0", PathMTU: m.PodMTU,
		Probes: []agent.DFSend{{Bytes: m.PodMTU, OK: true}, {Bytes: m.PodMTU + 1, Error: "message too long"}}}
	if m.PathMTU > 0 && m.PathMTU < m.PodMTU {
		df.PathMTU = m.PathMTU
		df.Probes[0] = agent.DFSend{Bytes: m.PodMTU, Error: "timeout"}
		if m.FragNeeded {
			df.Probes[0].Error = "fragmentation needed (MTU 1450) from 198.18.1.1"
			df.FragNeeded = []agent.FragNeeded{{From: "198.18.1.1", MTU: 1450}}
			sent = 2
		}
		df.Probes = append(df.Probes, agent.DFSend{Bytes: m.PathMTU, OK: true}, agent.DFSend{Bytes: m.PathMTU + 1, Error: "timeout"})
	}
	return netpath.MTUInput{NodeA: "n1", NodeB: "n2", NetA: m.nodeNet(10), NetB: m.nodeNet(3), AfterA: m.nodeNet(10 + sent), AfterB: m.nodeNet(3),
		Pod: &agent.NodeNet{Uplink: "eth0", Interfaces: []agent.Iface{{Name: "eth0", MTU: m.PodMTU, Up: true}}}, DF: df}
}

// Result is the MTU check's result of the readings.
func (m MTURun) Result() result.Result {
	res := result.Result{Name: netpath.MTUName, Status: result.StatusPass}
	netpath.MTUResult(&res, m.Input())
	return res
}

func mtu(m MTURun) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, m.Result()) }
}

// MTU runs: healthy flannel and bridge labs, and the two scenarios' mechanisms.
var (
	MTUHealthyFlannel = MTURun{Overlay: true, PodMTU: 1450}
	MTUHealthyBridge  = MTURun{PodMTU: 1500}
	MTUPodWrong       = MTURun{Overlay: true, PodMTU: 1500, PathMTU: 1450, FragNeeded: true}
	MTUTransit        = MTURun{Overlay: true, PodMTU: 1450, PathMTU: 1350}
)
