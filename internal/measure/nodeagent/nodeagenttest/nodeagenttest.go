// Package nodeagenttest is nodes.agent's analysis of the node agent's own reader run on fixture hosts: the
// fixtures of its rules.
package nodeagenttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet/nodenettest"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Hosts is the directory of the fixture host trees (internal/source/agent/testdata/hosts).
var Hosts = ruletest.Path("internal/source/agent/testdata/hosts")

// Sweep is the node sweep's result over fixture hosts: the node agent's own reader run on the fixture trees
// of internal/source/agent/testdata/hosts (named by node), plus the disks each node's directories are on (read by
// the agent's sysfs reader from a fixture sysfs) and its sync-probe median.
type Sweep struct {
	Hosts map[string]string // node -> fixture tree
	// Disk (major:minor in testdata/sysfs-disks) and sync median per node, for the runtime directory.
	Disk map[string][2]uint32
	Sync map[string]time.Duration
	// NoPause lists the nodes whose status lacks the runtime's pause image (the others hold it).
	NoPause map[string]bool
}

// Result is nodeagent.Analyze over the hosts as the agent reads them.
func (s Sweep) Result(t *testing.T) result.Result {
	t.Helper()
	var hosts []agent.NodeHost
	for node, tree := range s.Hosts {
		r := filepath.Join(Hosts, tree)
		o := agent.NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", NetSys: r + "/sys", Root: r + "/root", Window: 20 * time.Millisecond, NodeName: node}
		if _, err := os.Stat(r + "/proc-after"); err == nil {
			o.PressureAfter = r + "/proc-after" // the PSI counters at the watch's end
		}
		h := agent.ReadNodeHost(context.Background(), o)
		if len(h.Unread) > 0 {
			t.Fatalf("fixture %s: %v", tree, h.Unread)
		}
		if dev, ok := s.Disk[node]; ok {
			d, err := agent.ReadBlockDev(ruletest.Path("internal/source/agent/testdata/sysfs-disks/sys"), dev[0], dev[1])
			if err != nil {
				t.Fatal(err)
			}
			d.Role, d.Dir = "runtime", "/"
			h.Disks = append(h.Disks, d)
		}
		if p50, ok := s.Sync[node]; ok {
			h.Sync = append(h.Sync, agent.SyncProbe{Role: "runtime", Dir: "/", Bytes: 1 << 20, N: 455, P50: p50.Seconds(), P99: 4 * p50.Seconds()})
		}
		hosts = append(hosts, *h)
	}
	var nodes []corev1.Node
	for node := range s.Hosts {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: corev1.NodeStatus{Images: []corev1.ContainerImage{
			{Names: []string{"docker.io/library/app@sha256:0d1f", "docker.io/library/app:1"}, SizeBytes: 300 << 20}}}}
		if !s.NoPause[node] {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{
				"registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097", "registry.k8s.io/pause:3.9"}, SizeBytes: 321520})
		}
		nodes = append(nodes, n)
	}
	nodeagent.MarkSandboxPresence(hosts, nodes)
	return nodeagent.Analyze(hosts, nil)
}

var (
	virtioDisk = [2]uint32{254, 0} // the lab machine's: rotational=1, virtio_blk
	hddDisk    = [2]uint32{8, 1}
	nvmeDisk   = [2]uint32{259, 0}
	// Healthy is three healthy nodes (the lab's shape: virtio disks, sub-millisecond syncs).
	Healthy = Sweep{Hosts: map[string]string{"n1": "healthy", "n2": "healthy", "n3": "healthy"},
		Disk: map[string][2]uint32{"n1": virtioDisk, "n2": virtioDisk, "n3": nvmeDisk},
		Sync: map[string]time.Duration{"n1": 170 * time.Microsecond, "n2": 200 * time.Microsecond, "n3": 60 * time.Microsecond}}
)

// WithHost is Healthy with node's host the fixture tree tree.
func WithHost(node, tree string) Sweep {
	s := Sweep{Hosts: map[string]string{}, Disk: Healthy.Disk, Sync: Healthy.Sync}
	for n, h := range Healthy.Hosts {
		s.Hosts[n] = h
	}
	s.Hosts[node] = tree
	return s
}

// RuleFixtures are nodeagent.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	sw := func(s Sweep) func(t *testing.T) *result.Report { return ruletest.One(s.Result) }
	healthy := sw(Healthy)
	hdd := Healthy
	hdd.Disk = map[string][2]uint32{"n1": hddDisk, "n2": virtioDisk, "n3": nvmeDisk}
	noPause := Healthy
	noPause.NoPause = map[string]bool{"n2": true}
	slowSync := Healthy
	slowSync.Sync = map[string]time.Duration{"n1": 170 * time.Microsecond, "n2": 9 * time.Millisecond, "n3": 60 * time.Microsecond}
	return map[string]ruletest.Fixture{
		// 990 of 1024 entries, no overflow line yet; and a healthy fleet.
		"KS-NODE-NEIGH-ALL":      {Fire: sw(WithHost("n2", "neigh-near")), Clear: healthy},
		"KS-NODE-CONNTRACK-ALL":  {Fire: sw(WithHost("n2", "neigh-overflow")), Clear: sw(WithHost("n2", "neigh-near"))},
		"KS-NODE-NEIGH-OVERFLOW": {Fire: sw(WithHost("n2", "neigh-overflow")), Clear: sw(WithHost("n2", "neigh-near"))}, // near the limit is not overflow
		"KS-NODE-CONNTRACK-DROP": {Fire: sw(WithHost("n2", "neigh-overflow")), Clear: sw(WithHost("n3", "hung-io"))},
		"KS-NODE-HUNG":           {Fire: sw(WithHost("n3", "hung-io")), Clear: sw(WithHost("n2", "neigh-overflow"))},
		"KS-NODE-DSTATE":         {Fire: sw(WithHost("n3", "hung-io")), Clear: healthy},
		"KS-NODE-IO-PRESSURE":    {Fire: sw(WithHost("n3", "hung-io")), Clear: healthy},
		// a SATA HDD fires; the lab's virtio disk (rotational=1 too) and an NVMe SSD stay clear.
		"KS-NODE-DISK-SPINNING": {Fire: sw(hdd), Clear: healthy},
		"KS-NODE-DISK-SYNC":     {Fire: sw(slowSync), Clear: healthy},
		// n2's status lacks registry.k8s.io/pause:3.9, which its containerd's configuration names; every node holds it.
		"KS-NODE-PAUSE-REMOTE": {Fire: sw(noPause), Clear: healthy},
		// KS-NET-MTU over the sweep's node facts (an alternative of the rule: ID@result): flannel on three nodes,
		// lab-node-2's eth0 at 1400 under flannel.1's 1450 + 50; and all at 1500.
		"KS-NET-MTU@" + nodeagent.Name: {Fire: flannelSweep(nodenettest.SetMTU("eth0", 1400)), Clear: flannelSweep()},
	}
}

// flannelSweep is the node sweep of three flannel nodes read from nodenettest's node facts, the second one
// edited.
func flannelSweep(edit2 ...func(*agent.NodeNet)) func(t *testing.T) *result.Report {
	return func(t *testing.T) *result.Report {
		hs := []agent.NodeHost{{Node: "lab-node-1", Net: nodenettest.FlannelNode(t)}, {Node: "lab-node-2", Net: nodenettest.FlannelNode(t, edit2...)},
			{Node: "lab-node-3", Net: nodenettest.FlannelNode(t)}}
		return ruletest.Report(nil, nodeagent.Analyze(hs, nil))
	}
}
