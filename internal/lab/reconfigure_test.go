package lab

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestReconfigurePlan: which components a change of configuration restarts, and which changes need a new lab
// (the pure part of Reconfigure: the plans compared, nothing started).
func TestReconfigurePlan(t *testing.T) {
	d := Dirs{Cache: "/cache", State: "/state"}
	ms := func(v time.Duration) Duration { return Duration{Duration: v} }
	base := Config{Nodes: 4, RealNodes: 2, Etcd: EtcdStorage{Kind: "tmpfs"}, AgentBinary: "/usr/local/bin/kubeslow"}
	kubeadm := base
	kubeadm.Layout, kubeadm.RealNodes = LayoutKubeadm, 1
	replicas := base
	replicas.DNS = DNSSettings{Replicas: 2, Placement: DNSPacked}
	for _, tc := range []struct {
		name    string
		from    Config
		change  func(*Config)
		restart []string // the components restarted
		fixed   []string // the settings fixedDifferences names (then nothing more is compared)
		newLab  bool     // the settings may change, but the plans differ beyond a component's process
	}{
		{name: "same", from: base, change: func(*Config) {}},
		{name: "scenario name only", from: base, change: func(c *Config) { c.Scenario = "slow-scheduler" }},
		{name: "scheduler", from: base, change: func(c *Config) { c.Scheduler = ClientSettings{QPS: 5, Burst: 5} }, restart: []string{KubeScheduler}},
		{name: "controller-manager", from: base, change: func(c *Config) {
			c.ControllerManager = ClientSettings{QPS: 20, Burst: 30}
			c.EndpointSliceBatch = ms(15 * time.Second)
		}, restart: []string{KubeControllerMgr}},
		{name: "kwok stages", from: base, change: func(c *Config) {
			c.Kwok = KwokSettings{PodReadyDelay: ms(200 * time.Millisecond), SlowNodes: []string{KwokNodeName(2)}, SlowNodeDelay: ms(3 * time.Second)}
		}, restart: []string{Kwok}},
		{name: "dns negative cache", from: base, change: func(c *Config) { c.DNS.DenialTTL = ms(20 * time.Second) }, restart: []string{CoreDNS}},
		{name: "etcd quota", from: base, change: func(c *Config) { c.EtcdQuotaBytes = 48 << 20 }, restart: []string{Etcd}},
		// Settings no scenario of the suite changes on a running lab are not reconfigured (never run that way).
		{name: "apiserver flags", from: base, change: func(c *Config) { c.APIServerExtraArgs = []string{"--max-requests-inflight=10"} },
			fixed: []string{"apiServerExtraArgs"}},
		{name: "image pulls", from: base, change: func(c *Config) { c.ImagePulls = ImagePullSettings{MaxParallel: 1} }, fixed: []string{"imagePulls"}},
		{name: "more kwok nodes", from: base, change: func(c *Config) { c.Nodes = 5 }, fixed: []string{"nodes"}},
		{name: "storage and real nodes", from: base, change: func(c *Config) {
			c.Etcd = EtcdStorage{Kind: "loop"}
			c.RealNodes = 1
		}, fixed: []string{"etcd", "realNodes"}},
		// The kubeadm layout's controller-manager is a static pod: its manifest is a work step's file.
		{name: "kubeadm controller-manager", from: kubeadm, change: func(c *Config) { c.ControllerManager = ClientSettings{QPS: 20} }, newLab: true},
		// With DNS replicas the Corefile is a ConfigMap the dns-deployment step writes.
		{name: "dns replicas' negative cache", from: replicas, change: func(c *Config) { c.DNS.DenialTTL = ms(20 * time.Second) }, fixed: []string{"dns"}},
		{name: "etcd quota past its tmpfs", from: base, change: func(c *Config) { c.EtcdQuotaBytes = 6 << 30 }, fixed: []string{"etcdQuotaBytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := tc.from
			tc.change(&to)
			if err := to.Validate(); err != nil {
				t.Fatal(err)
			}
			fixed := fixedDifferences(tc.from, to)
			if !slices.Equal(fixed, tc.fixed) {
				t.Errorf("fixed differences %q, want %q", fixed, tc.fixed)
			}
			if len(fixed) > 0 {
				return
			}
			old, err := NewPlan(d, tc.from, planBinaries())
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(d, to, planBinaries())
			if err != nil {
				t.Fatal(err)
			}
			idx, err := changedComponents(old, p)
			if tc.newLab {
				if !IsNeedsNewLab(err) {
					t.Fatalf("changed %v, err %v: want a NeedsNewLabError", idx, err)
				}
				t.Logf("%v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, i := range idx {
				got = append(got, p.Steps[i].Component.Name)
			}
			if !slices.Equal(got, tc.restart) {
				t.Errorf("restarts %q, want %q", got, tc.restart)
			}
		})
	}
}

// TestKwokLeasesReleased: a stopped kwok's Leases of the simulated nodes go (a real node's stays), and the wait
// for the new kwok ends once every simulated node's Lease was renewed since its start.
func TestKwokLeasesReleased(t *testing.T) {
	ctx := context.Background()
	node := func(name string, simulated bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if simulated {
			n.Labels[KwokNodeLabel] = KwokNodeLabelValue
		}
		return n
	}
	lease := func(name string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("old-kwok"), RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	old := time.Now().Add(-10 * time.Second)
	c := fake.NewClientset(node(KwokNodeName(1), true), node(KwokNodeName(2), true), node(RealNodeName(1), false),
		lease(KwokNodeName(1), old), lease(KwokNodeName(2), old), lease(RealNodeName(1), old))
	u := &upRun{client: c}
	n, err := releaseKwokLeases(ctx, u)
	if err != nil || n != 2 {
		t.Fatalf("released %d, %v: want the 2 simulated nodes' Leases", n, err)
	}
	left, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil || len(left.Items) != 1 || left.Items[0].Name != RealNodeName(1) {
		t.Fatalf("Leases left %+v (%v): want the real node's alone", left, err)
	}
	since := time.Now()
	for i, renewed := range []time.Time{since.Add(time.Second), since.Add(2 * time.Second)} {
		if _, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease(KwokNodeName(i+1), renewed), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitKwokLeases(ctx, u, since); err != nil {
		t.Fatal(err)
	}
	// A Lease renewed before the restart is not the new kwok's: the wait does not end on it.
	if err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, KwokNodeName(2), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease(KwokNodeName(2), old), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := waitKwokLeases(cctx, u, since); err == nil || !strings.Contains(err.Error(), "renewed 1 of its 2") {
		t.Fatalf("wait with a stale Lease: %v, want it to say 1 of 2 renewed", err)
	}
}
