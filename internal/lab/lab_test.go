package lab

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestParseEtcdStorage(t *testing.T) {
	cases := map[string]struct {
		want EtcdStorage
		err  bool
	}{
		"":                {want: EtcdStorage{Kind: "tmpfs"}},
		"tmpfs":           {want: EtcdStorage{Kind: "tmpfs"}},
		"dir:/var/etcd":   {want: EtcdStorage{Kind: "dir", Path: "/var/etcd"}},
		"device:/dev/vdb": {want: EtcdStorage{Kind: "device", Path: "/dev/vdb"}},
		"loop":            {want: EtcdStorage{Kind: "loop"}},
		"dir:relative":    {err: true},
		"disk:/dev/vdb":   {err: true},
		"dir:":            {err: true},
	}
	for in, c := range cases {
		got, err := ParseEtcdStorage(in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("ParseEtcdStorage(%q) = %+v, %v", in, got, err)
		}
		if !c.err && in != "" && got.String() != in {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Nodes: 50}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	shortest := Config{Nodes: 50, NodeMonitorGracePeriod: Duration{MinNodeMonitorGracePeriod}}
	if err := shortest.Validate(); err != nil {
		t.Fatal(err)
	}
	if args := controllerManagerArgs(Dirs{}, &shortest, "kcm"); !slices.Contains(args, "--node-monitor-grace-period=30s") {
		t.Errorf("controller-manager flags without the grace period: %v", args)
	}
	if args := controllerManagerArgs(Dirs{}, &ok, "kcm"); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--node-monitor-grace-period") }) {
		t.Errorf("controller-manager flags with a grace period nobody set: %v", args)
	}
	for name, c := range map[string]Config{
		"too many nodes":      {Nodes: MaxKwokNodes + 1},
		"negative nodes":      {Nodes: -1},
		"negative qps":        {ControllerManager: ClientSettings{QPS: -1}},
		"negative delay":      {Kwok: KwokSettings{PodReadyDelay: Duration{-time.Second}}},
		"grace under 2 beats": {NodeMonitorGracePeriod: Duration{20 * time.Second}},
		"negative grace":      {NodeMonitorGracePeriod: Duration{-time.Second}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

type stage struct {
	Metadata struct{ Name string }
	Spec     struct {
		Selector struct {
			MatchExpressions []struct {
				Key, Operator string
				Values        []string
			}
		}
		Delay *struct {
			DurationMilliseconds       int64
			JitterDurationMilliseconds int64
		}
	}
}

func parseStages(t *testing.T, b []byte) map[string]stage {
	t.Helper()
	out := map[string]stage{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		doc = strings.TrimPrefix(doc, "---\n")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var s stage
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatalf("stage YAML: %v\n%s", err, doc)
		}
		out[s.Metadata.Name] = s
	}
	return out
}

func TestKwokStages(t *testing.T) {
	b, err := kwokStages(KwokSettings{})
	if err != nil {
		t.Fatal(err)
	}
	st := parseStages(t, b)
	for _, n := range []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"} {
		if _, ok := st[n]; !ok {
			t.Fatalf("stage %s missing; have %v", n, st)
		}
	}
	if st["pod-ready"].Spec.Delay != nil {
		t.Fatal("default pod-ready has a delay")
	}

	b, err = kwokStages(KwokSettings{PodReadyDelay: Duration{200 * time.Millisecond}, PodReadyJitter: Duration{100 * time.Millisecond},
		SlowNodes: []string{"kwok-node-3"}, SlowNodeDelay: Duration{4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	st = parseStages(t, b)
	normal, slow := st["pod-ready"], st["pod-ready-slow-nodes"]
	if normal.Spec.Delay == nil || normal.Spec.Delay.DurationMilliseconds != 200 || normal.Spec.Delay.JitterDurationMilliseconds != 300 {
		t.Fatalf("pod-ready delay %+v, want 200..300 ms", normal.Spec.Delay)
	}
	if slow.Spec.Delay == nil || slow.Spec.Delay.DurationMilliseconds != 4000 {
		t.Fatalf("slow stage delay %+v", slow.Spec.Delay)
	}
	last := func(s stage) (string, string, []string) {
		e := s.Spec.Selector.MatchExpressions[len(s.Spec.Selector.MatchExpressions)-1]
		return e.Key, e.Operator, e.Values
	}
	if k, op, v := last(normal); k != ".spec.nodeName" || op != "NotIn" || len(v) != 1 || v[0] != "kwok-node-3" {
		t.Fatalf("normal stage must exclude the slow node: %s %s %v", k, op, v)
	}
	if k, op, v := last(slow); k != ".spec.nodeName" || op != "In" || v[0] != "kwok-node-3" {
		t.Fatalf("slow stage must select the slow node: %s %s %v", k, op, v)
	}
}

func TestAddressesInBenchmarkRange(t *testing.T) {
	for _, a := range []string{HostLinkIP, UplinkIP, ControlPlaneIP, KubernetesSvcIP, ClusterDNSIP} {
		if !strings.HasPrefix(a, "198.18.") && !strings.HasPrefix(a, "198.19.") {
			t.Errorf("%s is outside 198.18.0.0/15", a)
		}
	}
	for _, c := range append([]string{PodCIDR, ServiceCIDR, NodeNetCIDR, KwokPodCIDR}, hostRoutes...) {
		if !strings.HasPrefix(c, "198.18.") && !strings.HasPrefix(c, "198.19.") {
			t.Errorf("%s is outside 198.18.0.0/15", c)
		}
	}
}

// TestDNSReplicas checks the DNS Deployment's placements and the replicas' Corefile: packed pins every
// replica to lab-node-1 with no spread, spread has the topology spread over the pods' own label, both stay on
// the real nodes; the external zone is forwarded to the upstream without a cache.
func TestDNSReplicas(t *testing.T) {
	packed := corednsDeployment(DNSSettings{Replicas: 3, Placement: DNSPacked})
	spec := packed.Spec.Template.Spec
	if spec.NodeSelector[corev1.LabelHostname] != RealNodeName(1) || spec.NodeSelector[RealNodeLabel] != "real" || len(spec.TopologySpreadConstraints) != 0 {
		t.Errorf("packed placement: %v %v", spec.NodeSelector, spec.TopologySpreadConstraints)
	}
	if *packed.Spec.Replicas != 3 || packed.Spec.Template.Labels[DNSPodLabel] != "kube-dns" || packed.Spec.Strategy.Type != "Recreate" {
		t.Errorf("deployment: %+v", packed.Spec)
	}
	spread := corednsDeployment(DNSSettings{Replicas: 2})
	spec = spread.Spec.Template.Spec
	if _, ok := spec.NodeSelector[corev1.LabelHostname]; ok || len(spec.TopologySpreadConstraints) != 1 ||
		spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels[DNSPodLabel] != "kube-dns" || spec.TopologySpreadConstraints[0].TopologyKey != corev1.LabelHostname {
		t.Errorf("spread placement: %v %+v", spec.NodeSelector, spec.TopologySpreadConstraints)
	}
	dnsPlacement(&spec, DNSPacked)
	if spec.NodeSelector[corev1.LabelHostname] != RealNodeName(1) || len(spec.TopologySpreadConstraints) != 0 {
		t.Errorf("spread -> packed: %v %v", spec.NodeSelector, spec.TopologySpreadConstraints)
	}
	cf := replicaCorefile(DNSSettings{DenialTTL: Duration{20 * time.Second}})
	ext := cf[strings.Index(cf, ExternalZone+":53"):]
	if !strings.Contains(ext, "forward . "+UpstreamDNSIP+":53") || strings.Contains(ext, "cache") || !strings.Contains(cf, "denial 9984 20 20") {
		t.Errorf("corefile:\n%s", cf)
	}
	argv := strings.Join(upstreamArgv("/bin/kubeslow", DNSSettings{}), " ")
	if !strings.Contains(argv, "--listen "+UpstreamDNSIP+":53") || !strings.Contains(argv, "--limit 200") {
		t.Errorf("upstream argv: %s", argv)
	}
	bad := Config{RealNodes: 0, DNS: DNSSettings{Replicas: 2}}
	if bad.Validate() == nil {
		t.Error("DNS replicas without real nodes accepted")
	}
}
