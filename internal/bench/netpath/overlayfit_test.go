package netpath_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/bench/netpath/netpathtest"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet/nodenettest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// capped is bench net on the flannel lab of issue 43: bulk throughput of the pod paths at 0.0573x host->host's.
func capped(links []nodenet.NodeLinks) netpathtest.Run {
	return netpathtest.Run{PodRatio: 0.95, ConntrackFill: 0.1, StreamRatio: 0.0573, Links: links}
}

// benchNet evaluates bench net's rules (the command's list) over the run.
func benchNet(t *testing.T, run netpathtest.Run) (map[string]result.Finding, map[string]result.RuleEvaluation) {
	t.Helper()
	fs, evals := rule.Evaluate(ruletest.Report(map[string]string{"cni": "flannel"}, run.Result()), netpath.Rules())
	byID := map[string]result.Finding{}
	for _, f := range fs {
		byID[f.ID] = f
		t.Logf("%s (%s): %s", f.ID, f.Severity, f.Summary)
	}
	ev := map[string]result.RuleEvaluation{}
	for _, e := range evals {
		ev[e.ID] = e
	}
	return byID, ev
}

// TestOverlayFitNarrowUplink: lab-node-2's eth0 lowered to 1400 under flannel.1 at 1450: KS-NET-MTU names that
// node and link with the numbers, and the capped pod path (KS-NET-POD) and the pod network's hop (KS-NET-HOP) are
// its symptoms, lowered to info under it.
func TestOverlayFitNarrowUplink(t *testing.T) {
	byID, _ := benchNet(t, capped(nodenettest.FlannelLinks(t, nil, []func(*agent.NodeNet){nodenettest.SetMTU("eth0", 1400)})))
	f, ok := byID["KS-NET-MTU"]
	if !ok || f.ItemCount != 1 || f.Items[0].Key != "link=node lab-node-2/eth0" || f.Items[0].Value != 100 {
		t.Fatalf("KS-NET-MTU %+v", f)
	}
	for _, want := range []string{"lab-node-2's eth0 MTU 1400 < flannel.1 1450 + VXLAN 50 = 1500", "(sent by lab-node-1, lab-node-2) are 100 bytes larger",
		"the overlay at 1350 on every node (the narrowest uplink, lab-node-2's eth0 1400, minus the overhead) or lab-node-2's eth0 at 1500"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, f.Summary)
		}
	}
	if f.Severity != result.SeverityError || f.Threshold.Value != 0 || !strings.Contains(f.Threshold.Source, "RFC 7348") ||
		!strings.Contains(f.Remediation, "restart flanneld") || len(f.Evidence) != 1 || f.Evidence[0].Labels["mtu"] != "1400" {
		t.Errorf("finding %+v", f)
	}
	for _, id := range []string{"KS-NET-POD", "KS-NET-HOP"} {
		s, ok := byID[id]
		if !ok || s.ExplainedBy != "KS-NET-MTU" || s.Severity != result.SeverityInfo || !strings.Contains(s.Summary, "a symptom of KS-NET-MTU") {
			t.Errorf("%s: %+v", id, s)
		}
	}
}

// TestOverlayFitHealthy: the healthy flannel lab (eth0 1500, flannel.1 1450 on both nodes: an exact fit) and a
// bridge lab (no overlay) raise no MTU finding; KS-NET-MTU is clear, and a capped path on them has no cause.
func TestOverlayFitHealthy(t *testing.T) {
	for name, links := range map[string][]nodenet.NodeLinks{
		"flannel": nodenettest.FlannelLinks(t, nil, nil),
		"bridge":  nodenettest.FlannelLinks(t, []func(*agent.NodeNet){nodenettest.NoOverlay}, []func(*agent.NodeNet){nodenettest.NoOverlay}),
	} {
		byID, ev := benchNet(t, capped(links))
		if _, ok := byID["KS-NET-MTU"]; ok || ev["KS-NET-MTU"].Status != result.RuleClear {
			t.Errorf("%s: KS-NET-MTU %+v %+v", name, byID["KS-NET-MTU"], ev["KS-NET-MTU"])
		}
		if p := byID["KS-NET-POD"]; p.ExplainedBy != "" || !strings.Contains(p.NoCause, "clear: KS-NET-MTU") {
			t.Errorf("%s: KS-NET-POD %+v", name, p)
		}
	}
}

// TestOverlayFitOverlayTooBig: flannel.1 at 1500 on every node over 1500 links: every node's link is named.
func TestOverlayFitOverlayTooBig(t *testing.T) {
	big := []func(*agent.NodeNet){nodenettest.SetMTU("flannel.1", 1500)}
	byID, _ := benchNet(t, capped(nodenettest.FlannelLinks(t, big, big)))
	f := byID["KS-NET-MTU"]
	if f.ItemCount != 2 || f.Items[0].Key != "link=node lab-node-1/eth0" || f.Items[1].Key != "link=node lab-node-2/eth0" {
		t.Fatalf("KS-NET-MTU %+v", f)
	}
	if !strings.Contains(f.Items[1].Summary, "lab-node-2's eth0 MTU 1500 < flannel.1 1500 + VXLAN 50 = 1550") ||
		!strings.Contains(f.Items[1].Summary, "the overlay at 1450 on every node") {
		t.Errorf("item %s", f.Items[1].Summary)
	}
}

// TestOverlayFitMissingFacts: a node whose probe failed, or whose default route the probe did not find, leaves
// KS-NET-MTU not evaluated with the reason, not clear and not a finding.
func TestOverlayFitMissingFacts(t *testing.T) {
	noRoute := func(n *agent.NodeNet) { n.Uplink = "" }
	for name, c := range map[string]struct {
		links []nodenet.NodeLinks
		why   string
	}{
		"probe failed": {[]nodenet.NodeLinks{{Node: "lab-node-1", Net: nodenettest.FlannelNode(t)}, {Node: "lab-node-2", Why: "the node probe failed: timeout"}},
			"lab-node-2: the node probe failed: timeout"},
		"no default route": {nodenettest.FlannelLinks(t, nil, []func(*agent.NodeNet){noRoute}), "lab-node-2: no default route"},
	} {
		byID, ev := benchNet(t, capped(c.links))
		if _, ok := byID["KS-NET-MTU"]; ok || ev["KS-NET-MTU"].Status != result.RuleNotEvaluated || !strings.Contains(ev["KS-NET-MTU"].Reason, c.why) {
			t.Errorf("%s: KS-NET-MTU %+v", name, ev["KS-NET-MTU"])
		}
		if p := byID["KS-NET-POD"]; !strings.Contains(p.NoCause, "not measured: KS-NET-MTU") {
			t.Errorf("%s: KS-NET-POD %+v", name, p)
		}
	}
}

// TestCatalogueMTURule: the catalogue's KS-NET-MTU is bench mtu's (net.mtu), bench net's list has the one over its
// node facts, and the rest of the lists agree.
func TestCatalogueMTURule(t *testing.T) {
	cat, bench := netpath.CatalogueRules(), netpath.Rules()
	if len(cat) != len(bench) {
		t.Fatalf("%d catalogue rules, %d bench net rules", len(cat), len(bench))
	}
	for i := range cat {
		if cat[i].ID != bench[i].ID {
			t.Errorf("rule %d: %s and %s", i, cat[i].ID, bench[i].ID)
		}
		if cat[i].ID == "KS-NET-MTU" && (cat[i].When.Metric.Result != netpath.MTUName || bench[i].When.Metric.Result != netpath.Name ||
			cat[i].Source != bench[i].Source || cat[i].Remediation != bench[i].Remediation) {
			t.Errorf("KS-NET-MTU: catalogue %+v, bench net %+v", cat[i].When, bench[i].When)
		}
	}
	if m := netpath.MTURules(); len(m) != 1 || m[0].ID != "KS-NET-MTU" || m[0].When.Metric.Result != netpath.MTUName {
		t.Errorf("MTURules %+v", m)
	}
}
