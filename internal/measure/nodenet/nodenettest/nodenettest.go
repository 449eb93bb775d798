// Package nodenettest is the node probe's facts of a flannel lab node (testdata/probe-node-flannel.json) and the
// faults the tests make of it: the fixtures of the node network's rules, for bench net and the node sweep alike.
package nodenettest

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
)

// FlannelNode is a flannel lab node as `kubeslow probe node` reports it (testdata/probe-node-flannel.json: eth0 at
// 1500 the uplink, flannel.1 VXLAN at 1450, cni0 and the veths at 1450), with edits applied.
func FlannelNode(t *testing.T, edits ...func(*agent.NodeNet)) *agent.NodeNet {
	t.Helper()
	b, err := os.ReadFile(ruletest.Path("internal/measure/nodenet/testdata/probe-node-flannel.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n agent.NodeNet
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(&n)
	}
	return &n
}

// SetMTU sets interface name's MTU (ip link set NAME mtu MTU).
func SetMTU(name string, mtu int) func(*agent.NodeNet) {
	return func(n *agent.NodeNet) {
		for i := range n.Interfaces {
			if n.Interfaces[i].Name == name {
				n.Interfaces[i].MTU = mtu
			}
		}
	}
}

// NoOverlay is a bridge lab's node: no flannel.1, cni0 and the veths at the uplink's 1500.
func NoOverlay(n *agent.NodeNet) {
	var keep []agent.Iface
	for _, i := range n.Interfaces {
		if i.Name != "flannel.1" {
			i.MTU = 1500
			keep = append(keep, i)
		}
	}
	n.Interfaces = keep
}

// FlannelLinks are the two flannel lab nodes' facts, node 1's and node 2's edited as given.
func FlannelLinks(t *testing.T, node1, node2 []func(*agent.NodeNet)) []nodenet.NodeLinks {
	return []nodenet.NodeLinks{{Node: "lab-node-1", Net: FlannelNode(t, node1...)}, {Node: "lab-node-2", Net: FlannelNode(t, node2...)}}
}
