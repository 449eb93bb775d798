// Package netpathtest is net.paths' summary of scripted path samples and node readings: the fixtures of its
// rules.
package netpathtest

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/measure/netpath"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Run is a network benchmark's paths and a node's tables.
type Run struct {
	PodRatio                  float64 // pod->pod other node over host->host, new connections
	ConntrackFill, Neighbours float64
}

// Result is netpath's summary of the run's samples and node readings.
func (n Run) Result() result.Result {
	res := result.Result{Name: netpath.Name, Status: result.StatusPass}
	paths := []netpath.Path{{Name: "host->host"}, {Name: "host->pod"}, {Name: "pod->pod other node"}, {Name: "pod->Service"}}
	samples := map[string][]float64{}
	for _, p := range paths {
		f := 0.97
		if p.Name == "host->host" {
			f = 1
		}
		nf := f
		if p.Name == "pod->pod other node" {
			nf = n.PodRatio
		}
		for _, r := range []float64{0.98, 1, 1.02} {
			samples[netpath.SampleKey(p.Name, "rps", "keepalive")] = append(samples[netpath.SampleKey(p.Name, "rps", "keepalive")], 20000*f*r)
			samples[netpath.SampleKey(p.Name, "rps", "new")] = append(samples[netpath.SampleKey(p.Name, "rps", "new")], 5000*nf*r)
			samples[netpath.SampleKey(p.Name, "stream_gbit", "stream")] = append(samples[netpath.SampleKey(p.Name, "stream_gbit", "stream")], 9*f*r)
		}
	}
	netpath.Summarize(&res, paths, samples)
	netpath.NodeNetResult(&res, "node n1", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "flannel.1", MTU: 1450, Kind: "vxlan"}},
		ConntrackEntries: int64(n.ConntrackFill * 262144), ConntrackMax: 262144, Neighbours: int64(n.Neighbours * 1024), NeighThresh3: 1024,
		KubeProxyMode: "iptables", KubeProxyRules: map[string]int64{"nat": 40123}})
	netpath.NodeNetResult(&res, "pod", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "eth0", MTU: 1450}}, ConntrackEntries: -1, Neighbours: -1})
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
	}
}
