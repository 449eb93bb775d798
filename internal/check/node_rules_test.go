package check

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
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
	cases := kubeletRuleCases()
	for id, c := range map[string]ruleCase{
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
	} {
		cases[id] = c
	}
	return cases
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

// kubeletFleet is nodes.kubelet's analysis of kubelets: each node's /configz (as a kubelet 1.36 returns it)
// and /metrics (written in the exposition format), with the largest image its status lists.
type kubeletFleet struct {
	serial  map[string]bool    // node -> serializeImagePulls (absent: the kubelet leaves it at its default)
	largest map[string]int64   // node -> largest image bytes
	startS  map[string]float64 // node -> pod start SLI observations' value (seconds)
}

func (k kubeletFleet) result(t *testing.T) result.Result {
	t.Helper()
	var nodes []kubelet.Node
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		serial := ""
		if v, ok := k.serial[n]; ok {
			serial = fmt.Sprintf(`"serializeImagePulls":%v,`, v)
		}
		cfg, err := kubelet.ParseConfigz([]byte(`{"kubeletconfig":{` + serial + `"maxPods":110,"kubeAPIQPS":50,"kubeAPIBurst":100,` +
			`"runtimeRequestTimeout":"2m0s","failCgroupV1":false}}`))
		if err != nil {
			t.Fatal(err)
		}
		e := newExpo()
		e.hist("kubelet_pod_start_sli_duration_seconds", "", 40, k.startS[n])
		e.hist("kubelet_runtime_operations_duration_seconds", `operation_type="create_container"`, 40, 0.02)
		e.hist("kubelet_pleg_relist_duration_seconds", "", 100, 0.004)
		e.counter("kubelet_runtime_operations_errors_total", `operation_type="pull_image"`, 0)
		nodes = append(nodes, kubelet.Node{Name: n, CPUs: 4, LargestImage: "registry.example/big:1", LargestImageBytes: k.largest[n], Config: cfg,
			Metrics: e.snapshot(t, t0)})
	}
	return kubelet.Analyze(nodes)
}

func kubeletRuleCases() map[string]ruleCase {
	kf := func(k kubeletFleet) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report { return report(nil, k.result(t)) }
	}
	even := map[string]float64{"n1": 1, "n2": 1, "n3": 1, "n4": 1}
	small := map[string]int64{"n1": 40 << 20, "n2": 40 << 20, "n3": 40 << 20, "n4": 40 << 20}
	big := map[string]int64{"n1": 40 << 20, "n2": 17 << 30, "n3": 40 << 20, "n4": 40 << 20}
	parallel := map[string]bool{"n1": false, "n2": false, "n3": false, "n4": false}
	return map[string]ruleCase{
		// the default (serialized) with a 17 GiB image on n2; the same image with parallel pulls, or serialized with small images.
		"KS-NODE-SERIAL-PULLS": {kf(kubeletFleet{largest: big, startS: even}), kf(kubeletFleet{serial: parallel, largest: big, startS: even})},
		"KS-NODE-START-OUTLIER": {kf(kubeletFleet{largest: small, startS: map[string]float64{"n1": 1, "n2": 1, "n3": 9, "n4": 1}}),
			kf(kubeletFleet{largest: small, startS: map[string]float64{"n1": 8, "n2": 9, "n3": 9, "n4": 8}})}, // all slow alike: no outlier
	}
}

// BenchmarkSweep5000 is the node sweep's analysis and rules over 5,000 node reports (the healthy fixture
// host, three of them with faults): what kubeslow's side costs per sweep at 5,000 nodes, besides the
// API requests.
func BenchmarkSweep5000(b *testing.B) {
	var hosts []agent.NodeHost
	trees := []string{"healthy", "neigh-overflow", "hung-io", "neigh-near"}
	read := map[string]*agent.NodeHost{}
	for _, tree := range trees {
		r := filepath.Join("../agent/testdata/hosts", tree)
		read[tree] = agent.ReadNodeHost(context.Background(), agent.NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root",
			Window: time.Millisecond})
	}
	for i := range 5000 {
		tree := trees[0]
		if i%1667 == 1 {
			tree = trees[1+i/1667%3]
		}
		h := *read[tree]
		h.Node = fmt.Sprintf("node-%04d", i)
		h.Sync = []agent.SyncProbe{{Role: "runtime", P50: 0.0002, P99: 0.002}, {Role: "kubelet", P50: 0.0002, P99: 0.002}}
		hosts = append(hosts, h)
	}
	rules := NodeRules()
	b.ResetTimer()
	for range b.N {
		res := nodeagent.Analyze(hosts, nil)
		fs, _ := Evaluate(report(nil, res), rules)
		if len(fs) == 0 {
			b.Fatal("no finding from the faulty hosts")
		}
	}
}
