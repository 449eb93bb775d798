package lab

import (
	"strings"
	"testing"
	"time"

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
	for name, c := range map[string]Config{
		"too many nodes": {Nodes: MaxKwokNodes + 1},
		"negative nodes": {Nodes: -1},
		"negative qps":   {ControllerManager: ClientSettings{QPS: -1}},
		"negative delay": {Kwok: KwokSettings{PodReadyDelay: Duration{-time.Second}}},
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
