package check

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/netpath"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestPodPhaseAttribution: the dominant phase is named only when the tail is slow and the phase's time per
// pod is above the server timestamps' 1 s precision.
func TestPodPhaseAttribution(t *testing.T) {
	ph := func(p string) map[string]string { return map[string]string{"phase": p} }
	mk := func(p90, share, mean float64) *result.Report {
		return &result.Report{Results: []result.Result{{Name: podstartup.Name, Status: result.StatusPass, Metrics: []result.Metric{
			{Name: "startup_sli_p90", Unit: "seconds", Value: p90},
			{Name: "tail_phase_share", Unit: "ratio", Value: share, Labels: ph("sandbox")},
			{Name: "tail_phase_share", Unit: "ratio", Value: 1 - share, Labels: ph("schedule")},
			{Name: "tail_phase_mean", Unit: "seconds", Value: mean, Labels: ph("sandbox")},
			{Name: "tail_phase_mean", Unit: "seconds", Value: mean * (1 - share) / share, Labels: ph("schedule")},
		}}}}
	}
	var rule Rule
	for _, r := range PodRules() {
		if r.ID == "KS-POD-PHASE" {
			rule = r
		}
	}
	for _, c := range []struct {
		name             string
		p90, share, mean float64
		want             bool
	}{
		{"slow tail, sandbox dominates", 6, 0.8, 4.8, true},
		{"fast tail", 0.9, 0.8, 0.7, false},
		{"no dominant phase", 6, 0.5, 3, false},
		{"dominant but within timestamp precision", 1.4, 0.64, 0.9, false},
		{"dominant only with the truncated second", 1.38, 0.73, 1.01, false},
		{"dominant beyond the truncated second", 3, 0.9, 2.7, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := Evaluate(mk(c.p90, c.share, c.mean), []Rule{rule})
			if got := len(fs) == 1; got != c.want {
				t.Fatalf("fired=%v, want %v (%+v)", got, c.want, fs)
			}
			if c.want && fs[0].Evidence[0].Labels["phase"] != "sandbox" {
				t.Fatalf("wrong phase %+v", fs[0].Evidence)
			}
		})
	}
}

// TestCNIIPAM: the combined rule needs both signals — a slow sandbox phase and a 409 storm on an IPAM
// resource; either alone is not case E.
func TestCNIIPAM(t *testing.T) {
	ph := map[string]string{"phase": "sandbox"}
	mk := func(sandboxMean, conflicts float64, resource string) *result.Report {
		return &result.Report{Results: []result.Result{
			{Name: podstartup.Name, Status: result.StatusFail, Metrics: []result.Metric{
				{Name: "tail_phase_share", Unit: "ratio", Value: 0.8, Labels: ph},
				{Name: "tail_phase_mean", Unit: "seconds", Value: sandboxMean, Labels: ph}}},
			{Name: apislo.Name, Status: result.StatusPass, Metrics: []result.Metric{
				{Name: "conflicts_per_minute", Unit: "per_minute", Value: conflicts, Labels: map[string]string{"resource": resource, "verb": "PUT"}}}},
		}}
	}
	for _, c := range []struct {
		name      string
		r         *result.Report
		wantFired bool
	}{
		{"both", mk(4, 3000, "ipamblocks"), true},
		{"conflicts elsewhere", mk(4, 3000, "configmaps"), false},
		{"fast sandbox", mk(0.3, 3000, "ipamblocks"), false},
		{"few conflicts", mk(4, 30, "ipamblocks"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, evals := Evaluate(c.r, CombinedRules())
			if (len(fs) == 1) != c.wantFired {
				t.Fatalf("findings %+v, evals %+v", fs, evals)
			}
			if c.wantFired && (fs[0].Evidence[0].Labels["resource"] != "ipamblocks" || fs[0].Evidence[1].Value != 4) {
				t.Fatalf("evidence %+v", fs[0].Evidence)
			}
		})
	}
	// Without the API measurement the rule is not evaluated, never passed.
	r := mk(4, 3000, "ipamblocks")
	r.Results = r.Results[:1]
	if _, evals := Evaluate(r, CombinedRules()); evals[0].Status != result.RuleNotEvaluated {
		t.Fatalf("evals %+v", evals)
	}
}

// TestNetPod: one finding for the pod paths below 90 % of host->host, each path an item on its worst
// connection mode, the worst path first and in the summary, naming the cluster's CNI; host paths and paths
// within the tolerance stay quiet.
func TestNetPod(t *testing.T) {
	m := func(path, conn string, v float64) result.Metric {
		return result.Metric{Name: "ratio_to_host", Unit: "ratio", Value: v, Labels: map[string]string{"path": path, "conn": conn}}
	}
	r := &result.Report{Cluster: result.Cluster{Facts: map[string]string{"cni": "flannel"}}, Results: []result.Result{{Name: netpath.Name, Status: result.StatusPass,
		Metrics: []result.Metric{m("host->host", "new", 1), m("host->pod", "new", 0.5), m("pod->pod other node", "keepalive", 0.8),
			m("pod->pod other node", "new", 0.06), m("pod->pod same node", "new", 0.95), m("pod->Service", "stream", 0.7)}}}}
	fs, _ := Evaluate(r, NetRules())
	if len(fs) != 1 || fs[0].ItemCount != 2 || len(fs[0].Items) != 2 {
		t.Fatalf("findings %+v", fs)
	}
	if e := fs[0].Evidence[0]; e.Labels["path"] != "pod->pod other node" || e.Labels["conn"] != "new" || e.Value != 0.06 ||
		!strings.Contains(fs[0].Summary, "flannel") || !strings.Contains(fs[0].Summary, "per new connection") {
		t.Fatalf("first finding %+v", fs[0])
	}
	if it := fs[0].Items; it[0].Key != "path=pod->pod other node" || it[0].Value != 0.06 || it[1].Key != "path=pod->Service" || it[1].Value != 0.7 ||
		!strings.Contains(it[1].Summary, "pod->Service reaches 0.7x") {
		t.Fatalf("items %+v", it)
	}
	if !strings.Contains(fs[0].Summary, "nothing (the node probes") {
		t.Errorf("no probe data, yet the summary says %q", fs[0].Summary)
	}
}

// TestNetPodObserved: what the agents saw (pod MTU, overlay, kube-proxy mode and NAT rules, conntrack) is in
// the finding's summary and evidence; conntrack and ARP tables past 80 % are findings of their own.
func TestNetPodObserved(t *testing.T) {
	w := func(name string, v float64, kv ...string) result.Metric {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return result.Metric{Name: name, Value: v, Labels: l}
	}
	r := &result.Report{Cluster: result.Cluster{Facts: map[string]string{}}, Results: []result.Result{{Name: netpath.Name, Status: result.StatusPass,
		Metrics: []result.Metric{
			w("ratio_to_host", 0.4, "path", "pod->pod other node", "conn", "new"),
			w("mtu", 1450, "where", "pod", "iface", "eth0"),
			w("kube_proxy_rules", 40123, "where", "node n1", "table", "nat"),
			w("conntrack_usage", 0.93, "where", "node n1"),
			w("conntrack_usage", 0.10, "where", "node n2"),
			w("neighbour_usage", 0.85, "where", "node n2"),
		},
		Records: []result.Record{{ID: "net node n1", Labels: map[string]string{"where": "node n1", "kube_proxy_mode": "iptables", "overlay": "flannel.1 (vxlan, MTU 1450)"}}},
	}}}
	fs, _ := Evaluate(r, NetRules())
	byID := map[string][]result.Finding{}
	for _, f := range fs {
		byID[f.ID] = append(byID[f.ID], f)
	}
	pod := byID["KS-NET-POD"]
	if len(pod) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	for _, want := range []string{"kube-proxy iptables", "pod MTU 1450", "40123 kube-proxy NAT rules on node n1", "conntrack 93% full on node n1", "overlay flannel.1 (vxlan, MTU 1450) on node n1"} {
		if !strings.Contains(pod[0].Summary, want) {
			t.Errorf("summary %q lacks %q", pod[0].Summary, want)
		}
	}
	if len(pod[0].Evidence) != 5 {
		t.Errorf("evidence %+v: want the ratio, the MTU, the rules and both conntrack fills", pod[0].Evidence)
	}
	if ct := byID["KS-NODE-CONNTRACK"]; len(ct) != 1 || ct[0].Evidence[0].Labels["where"] != "node n1" {
		t.Errorf("conntrack findings %+v", ct)
	}
	if ng := byID["KS-NODE-NEIGH"]; len(ng) != 1 || ng[0].Evidence[0].Labels["where"] != "node n2" {
		t.Errorf("neighbour findings %+v", ng)
	}
}
