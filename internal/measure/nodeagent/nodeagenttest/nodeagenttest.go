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
	// DNS is a node's DNS report (as its agent's tracer would give it), and Pods the pods the API lists
	// (MarkDNSClients names the clients from them).
	DNS  map[string]*agent.DNSReport
	Pods []corev1.Pod
	// Connects is a node's TCP connect report (as its agent's tracer would give it).
	Connects map[string]*agent.ConnectReport
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
		if d := s.DNS[node]; d != nil {
			c := *d
			c.Clients = append([]agent.DNSClient(nil), d.Clients...)
			h.DNS = &c
		}
		if r := s.Connects[node]; r != nil {
			c := *r
			c.Clients = append([]agent.ConnectClient(nil), r.Clients...)
			h.Connects = &c
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
	nodeagent.MarkDNSClients(hosts, s.Pods, nodes)
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

// DNS fixtures: n2 runs pod shop/web (10.244.2.7) and host-network processes (node address 192.168.1.2);
// CoreDNS's Service is 10.96.0.10:53. The figures are a 10 s watch (a test's longer --window) with the agent's 5 s time-out.
var (
	DNSPods = []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.PodSpec{NodeName: "n2"},
			Status: corev1.PodStatus{PodIP: "10.244.2.7", PodIPs: []corev1.PodIP{{IP: "10.244.2.7"}}}},
		// the same IP on another node (another node's pod CIDR is not n2's: it must not name n2's client)
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "elsewhere"}, Spec: corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.244.2.8"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy-n2"}, Spec: corev1.PodSpec{NodeName: "n2", HostNetwork: true},
			Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "192.168.1.2"}}}},
	}
	// DNSHealthy: web asks 20 queries a second (A and AAAA), all answered in about a millisecond; a host-network
	// process asks one.
	DNSHealthy = &agent.DNSReport{Cgroup: "/host/sys/fs/cgroup/unified", WindowSeconds: 10, TimeoutSeconds: 5, Clients: []agent.DNSClient{
		{Client: "10.244.2.7", Server: "10.96.0.10:53", CgroupIDs: []uint64{1}, Queries: 46, Answered: 46, PerSecond: 20, NoError: 46, NoData: 23,
			A: 23, AAAA: 23, P50: 0.0008, P99: 0.003, Max: 0.004},
		{Client: "192.168.1.2", Server: "10.96.0.10:53", CgroupIDs: []uint64{7, 9}, Queries: 1, Answered: 1, PerSecond: 0.43, NoError: 1, A: 1,
			P50: 0.001, P99: 0.001, Max: 0.001},
	}}
	// DNSTimingOut: web's queries are dropped (6 of 46 unanswered); the host-network process, one time-out in
	// 40 queries (below both thresholds); an unknown client 10.244.2.8, 1 time-out of 1 (below the count).
	DNSTimingOut = &agent.DNSReport{Cgroup: "/host/sys/fs/cgroup/unified", WindowSeconds: 10, TimeoutSeconds: 5, Clients: []agent.DNSClient{
		{Client: "10.244.2.7", Server: "10.96.0.10:53", CgroupIDs: []uint64{1}, Queries: 46, Answered: 40, TimedOut: 6, PerSecond: 20, NoError: 40,
			NoData: 20, A: 23, AAAA: 23, P50: 0.0008, P99: 0.003, Max: 0.004},
		{Client: "192.168.1.2", Server: "10.96.0.10:53", CgroupIDs: []uint64{7}, Queries: 40, Answered: 39, TimedOut: 1, PerSecond: 17, NoError: 39,
			A: 40, P50: 0.001, P99: 0.002, Max: 0.002},
		{Client: "10.244.2.8", Server: "10.96.0.10:53", CgroupIDs: []uint64{1}, Queries: 1, TimedOut: 1, PerSecond: 0.43, A: 1},
	}}
)

// WithDNS is Healthy with n2's agent reporting d, the other agents no DNS client, and the DNS fixtures' pods.
func WithDNS(d *agent.DNSReport) Sweep {
	s := WithHost("n2", "healthy")
	none := &agent.DNSReport{WindowSeconds: 10, TimeoutSeconds: 5, Clients: []agent.DNSClient{}}
	s.DNS, s.Pods = map[string]*agent.DNSReport{"n1": none, "n2": d, "n3": none}, DNSPods
	return s
}

// Connect fixtures on n2, as the DNS ones: shop/web (10.244.2.7) connects to a Service 10.96.12.4:443 and to a
// pod 10.244.1.9:8080; a host-network process to the apiserver. A 10 s watch.
var (
	// ConnectsHealthy: every connect established in well under a millisecond but one of web's to the Service, at
	// the initial RTO (a single lost SYN, 1 in 200: below the count); kubelet-style probes that were refused
	// (failures, not slow connects).
	ConnectsHealthy = &agent.ConnectReport{WindowSeconds: 10, Clients: []agent.ConnectClient{
		{Client: "10.244.2.7", Dest: "10.96.12.4:443", Connects: 200, Slow: 1, PerSecond: 20, P50: 0.0002, P99: 0.0009, Max: 1.01},
		{Client: "10.244.2.7", Dest: "10.244.1.9:8080", Connects: 40, PerSecond: 4, P50: 0.0003, P99: 0.0006, Max: 0.0007},
		{Client: "192.168.1.2", Dest: "10.244.2.7:8080", Connects: 5, Failures: 5, PerSecond: 0.5},
	}}
	// ConnectsRetransmitting: a third of web's connects to the pod waited for a second SYN (1 s, some 3 s); the
	// Service's path is as healthy; the host-network process, 1 slow of 2 (below the count).
	ConnectsRetransmitting = &agent.ConnectReport{WindowSeconds: 10, Clients: []agent.ConnectClient{
		{Client: "10.244.2.7", Dest: "10.96.12.4:443", Connects: 200, Slow: 1, PerSecond: 20, P50: 0.0002, P99: 0.0009, Max: 1.01},
		{Client: "10.244.2.7", Dest: "10.244.1.9:8080", Connects: 30, Slow: 10, PerSecond: 3, P50: 0.0004, P99: 3.01, Max: 3.02},
		{Client: "192.168.1.2", Dest: "10.96.0.1:443", Connects: 2, Slow: 1, PerSecond: 0.2, P50: 0.5, P99: 1.01, Max: 1.01},
	}}
)

// WithConnects is Healthy with n2's agent reporting r, the other agents no connect, and the DNS fixtures' pods.
func WithConnects(r *agent.ConnectReport) Sweep {
	s := WithHost("n2", "healthy")
	none := &agent.ConnectReport{WindowSeconds: 10, Clients: []agent.ConnectClient{}}
	s.Connects, s.Pods = map[string]*agent.ConnectReport{"n1": none, "n2": r, "n3": none}, DNSPods
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
		// shop/web on n2: 6 of its 46 queries to CoreDNS unanswered; and all answered.
		"KS-POD-DNS-TIMEOUT": {Fire: sw(WithDNS(DNSTimingOut)), Clear: sw(WithDNS(DNSHealthy))},
		// shop/web on n2: 10 of its 30 connects to a pod waited for a second SYN; and one lost SYN in 200.
		"KS-POD-CONNECT-SLOW": {Fire: sw(WithConnects(ConnectsRetransmitting)), Clear: sw(WithConnects(ConnectsHealthy))},
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
