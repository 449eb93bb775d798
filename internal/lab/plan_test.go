package lab

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "regenerate the plan golden files in testdata/")

// planBinaries are fixed binary paths, so that the golden plans do not depend on the machine.
func planBinaries() map[string]string {
	bins := map[string]string{}
	for _, n := range plannedBinaries(&Config{RealNodes: 1, Prometheus: true}) {
		bins[n] = "/cache/bin/" + n
	}
	return bins
}

// TestPlanGolden renders the plans of five labs (one of the kubeadm layout, with its static pods' manifests) (the plan is pure: no root, nothing written) with every file
// their components read, and compares them with testdata/plan-*.golden (go test ./internal/lab -run
// TestPlanGolden -update regenerates them).
func TestPlanGolden(t *testing.T) {
	d := Dirs{Cache: "/cache", State: "/state"}
	ms := func(v time.Duration) Duration { return Duration{Duration: v} }
	for name, c := range map[string]Config{
		"default": {Nodes: 10, RealNodes: 1, Etcd: EtcdStorage{Kind: "tmpfs"}, AgentBinary: "/usr/local/bin/kubeslow", Scenario: "healthy",
			ImagePulls: ImagePullSettings{Serialize: true}, DNS: DNSSettings{CacheTTL: ms(30 * time.Second), DenialTTL: ms(5 * time.Second)}},
		"kwok-only": {Nodes: 50, Etcd: EtcdStorage{Kind: "loop"}, EtcdWriteIOPS: 100, EtcdQuotaBytes: 64 << 20,
			Scheduler: ClientSettings{QPS: 5, Burst: 5}, ControllerManager: ClientSettings{QPS: 200, Burst: 400},
			Kwok:               KwokSettings{PodReadyDelay: ms(200 * time.Millisecond), PodReadyJitter: ms(300 * time.Millisecond), SlowNodes: []string{"kwok-node-2"}, SlowNodeDelay: ms(3 * time.Second)},
			APIServerExtraArgs: []string{"--max-requests-inflight=10"}},
		"full": {Nodes: 5, RealNodes: 2, Etcd: EtcdStorage{Kind: "dir", Path: "/var/tmp/etcd"}, AgentBinary: "/usr/local/bin/kubeslow", Prometheus: true,
			ImagePulls: ImagePullSettings{MaxParallel: 2}, Registry: RegistrySettings{BytesPerSecond: 1 << 20, Latency: ms(50 * time.Millisecond)}},
		"kubeadm": {Layout: LayoutKubeadm, Nodes: 2, RealNodes: 1, Etcd: EtcdStorage{Kind: "loop"}, EtcdWriteIOPS: 30, AgentBinary: "/usr/local/bin/kubeslow",
			Scenario: "slow-etcd-disk", ImagePulls: ImagePullSettings{Serialize: true}},
		"dns-replicas": {Nodes: 3, RealNodes: 2, Etcd: EtcdStorage{Kind: "tmpfs"}, AgentBinary: "/usr/local/bin/kubeslow", Scenario: "dns-hotspot",
			ImagePulls: ImagePullSettings{Serialize: true}, DNS: DNSSettings{Replicas: 2, Placement: DNSPacked}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(d, c, planBinaries())
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString(p.Render())
			for _, s := range p.Steps {
				files, owner := s.Files, s.Name
				if comp := s.Component; comp != nil {
					files, owner = append(slices.Clone(comp.Files), s.Files...), comp.Name
				}
				for _, f := range files {
					b.WriteString("\n--- " + f.Path + " (" + owner + ", mode " + f.Mode.String() + ")\n" + f.Data)
				}
			}
			path := filepath.Join("testdata", "plan-"+name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/lab -run TestPlanGolden -update)", err)
			}
			if b.String() != string(want) {
				t.Errorf("the plan differs from %s (if the change is intended, regenerate with -update):\n%s", path, firstDiff(string(want), b.String()))
			}
		})
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return ""
}

// TestPlanOrder: components start in dependency order, and `lab down` stops them in reverse, after any
// recorded process the plan does not know.
func TestPlanOrder(t *testing.T) {
	c := Config{Nodes: 1, RealNodes: 2, Prometheus: true, AgentBinary: "/kubeslow"}
	p, err := NewPlan(Dirs{Cache: "/cache", State: "/state"}, c, planBinaries())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, comp := range p.Components() {
		names = append(names, comp.Name)
	}
	want := []string{Etcd, KubeAPIServer, KubeControllerMgr, KubeScheduler, Kwok, CoreDNS, "registry",
		"lab-node-1.containerd", "lab-node-1.kubelet", "lab-node-1.kube-proxy", "lab-node-2.containerd", "lab-node-2.kubelet", "lab-node-2.kube-proxy",
		CgroupMetricsComponent, NodeExporterComponent, PrometheusComponent}
	if !slices.Equal(names, want) {
		t.Fatalf("start order %v\nwant %v", names, want)
	}
	recorded := append([]string{"storm-list"}, names...)
	stop := stopOrder(&State{Config: c}, recorded)
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if !slices.Equal(stop, append([]string{"storm-list"}, rev...)) {
		t.Fatalf("stop order %v", stop)
	}
	// Without a record of the lab, every component is still placed.
	if stop := stopOrder(nil, []string{Etcd, "lab-node-1.kubelet", KubeAPIServer}); !slices.Equal(stop, []string{"lab-node-1.kubelet", KubeAPIServer, Etcd}) {
		t.Fatalf("stop order without state %v", stop)
	}
	if _, err := NewPlan(Dirs{}, Config{RealNodes: 1}, planBinaries()); err == nil {
		t.Error("a plan with real nodes but no kubeslow binary for their images")
	}
	if _, err := NewPlan(Dirs{}, Config{}, map[string]string{Etcd: "/etcd"}); err == nil {
		t.Error("a plan without the apiserver's binary")
	}
}
