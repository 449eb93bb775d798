package check

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// sweep is the node sweep's result over fixture hosts: the node agent's own reader run on the fixture trees
// of internal/agent/testdata/hosts (named by node), plus the disks each node's directories are on (read by
// the agent's sysfs reader from a fixture sysfs) and its sync-probe median.
type sweep struct {
	hosts map[string]string // node -> fixture tree
	// disk (major:minor in testdata/sysfs-disks) and sync median per node, for the runtime directory.
	disk map[string][2]uint32
	sync map[string]time.Duration
}

func (s sweep) result(t *testing.T) result.Result {
	t.Helper()
	var hosts []agent.NodeHost
	for node, tree := range s.hosts {
		r := filepath.Join("../agent/testdata/hosts", tree)
		h := agent.ReadNodeHost(context.Background(), agent.NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root",
			Window: 20 * time.Millisecond, NodeName: node})
		if len(h.Unread) > 0 {
			t.Fatalf("fixture %s: %v", tree, h.Unread)
		}
		if dev, ok := s.disk[node]; ok {
			d, err := agent.ReadBlockDev("../agent/testdata/sysfs-disks/sys", dev[0], dev[1])
			if err != nil {
				t.Fatal(err)
			}
			d.Role, d.Dir = "runtime", "/"
			h.Disks = append(h.Disks, d)
		}
		if p50, ok := s.sync[node]; ok {
			h.Sync = append(h.Sync, agent.SyncProbe{Role: "runtime", Dir: "/", Bytes: 1 << 20, N: 455, P50: p50.Seconds(), P99: 4 * p50.Seconds()})
		}
		hosts = append(hosts, *h)
	}
	return nodeagent.Analyze(hosts, nil)
}

var (
	virtioDisk = [2]uint32{254, 0} // the lab machine's: rotational=1, virtio_blk
	hddDisk    = [2]uint32{8, 1}
	nvmeDisk   = [2]uint32{259, 0}
	// healthySweep is three healthy nodes (the lab's shape: virtio disks, sub-millisecond syncs).
	healthySweep = sweep{hosts: map[string]string{"n1": "healthy", "n2": "healthy", "n3": "healthy"},
		disk: map[string][2]uint32{"n1": virtioDisk, "n2": virtioDisk, "n3": nvmeDisk},
		sync: map[string]time.Duration{"n1": 170 * time.Microsecond, "n2": 200 * time.Microsecond, "n3": 60 * time.Microsecond}}
)

func withHost(node, tree string) sweep {
	s := sweep{hosts: map[string]string{}, disk: healthySweep.disk, sync: healthySweep.sync}
	for n, h := range healthySweep.hosts {
		s.hosts[n] = h
	}
	s.hosts[node] = tree
	return s
}

func nodeRuleCases() map[string]ruleCase {
	sw := func(s sweep) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report { return report(nil, s.result(t)) }
	}
	healthy := sw(healthySweep)
	hdd := healthySweep
	hdd.disk = map[string][2]uint32{"n1": hddDisk, "n2": virtioDisk, "n3": nvmeDisk}
	slowSync := healthySweep
	slowSync.sync = map[string]time.Duration{"n1": 170 * time.Microsecond, "n2": 9 * time.Millisecond, "n3": 60 * time.Microsecond}
	return map[string]ruleCase{
		// 990 of 1024 entries, no overflow line yet; and a healthy fleet.
		"KS-NODE-NEIGH-ALL":      {sw(withHost("n2", "neigh-near")), healthy},
		"KS-NODE-CONNTRACK-ALL":  {sw(withHost("n2", "neigh-overflow")), sw(withHost("n2", "neigh-near"))},
		"KS-NODE-NEIGH-OVERFLOW": {sw(withHost("n2", "neigh-overflow")), sw(withHost("n2", "neigh-near"))}, // near the limit is not overflow
		"KS-NODE-CONNTRACK-DROP": {sw(withHost("n2", "neigh-overflow")), sw(withHost("n3", "hung-io"))},
		"KS-NODE-HUNG":           {sw(withHost("n3", "hung-io")), sw(withHost("n2", "neigh-overflow"))},
		"KS-NODE-DSTATE":         {sw(withHost("n3", "hung-io")), healthy},
		"KS-NODE-IO-PRESSURE":    {sw(withHost("n3", "hung-io")), healthy},
		// a SATA HDD fires; the lab's virtio disk (rotational=1 too) and an NVMe SSD stay clear.
		"KS-NODE-DISK-SPINNING": {sw(hdd), healthy},
		"KS-NODE-DISK-SYNC":     {sw(slowSync), healthy},
	}
}

// TestNodeRulesNameTheWorstNode: the finding is one per rule, its items worst first, naming the node.
func TestNodeRulesNameTheWorstNode(t *testing.T) {
	s := withHost("n2", "neigh-overflow")
	s.hosts["n3"] = "neigh-near"
	fs, _ := Evaluate(report(nil, s.result(t)), NodeRules())
	var neigh *result.Finding
	for i := range fs {
		if fs[i].ID == "KS-NODE-NEIGH-ALL" {
			neigh = &fs[i]
		}
	}
	if neigh == nil || neigh.ItemCount != 2 || neigh.Items[0].Key != "node=n2" || neigh.Items[1].Key != "node=n3" {
		t.Fatalf("neighbour finding %+v", neigh)
	}
}
