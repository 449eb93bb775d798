package scenario_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationSlowPodsAndDNS runs on one lab (two real nodes), in sequence:
//  1. Events on slow pods: a pod that fits no node (it asks for 100,000 CPUs), a pod whose RuntimeClass names a
//     handler containerd lacks (its sandbox fails) and a healthy pod, watched as pods.startup watches them;
//     KS-POD-EVENTS names both classes, each on one of the two slow pods, and the healthy pod is not slow.
//  2. DNS 5 s: dns.lookups on the healthy lab raises nothing; with one UDP/53 packet in two to the DNS Service
//     dropped in lab-node-1's network namespace (nftables numgen), and then with its AAAA queries dropped,
//     KS-DNS-5S names lab-node-1 and not lab-node-2.
func TestIntegrationSlowPodsAndDNS(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rc, down := labtest.Up(t, d, func() error {
		_, err := lab.Up(ctx, d, lab.Config{Nodes: 1, RealNodes: 2, AgentBinary: labtest.Binary(t)}, t.Logf)
		return err
	})
	defer down()
	c := kubernetes.NewForConfigOrDie(rc)

	// 1. Events.
	const ns = "slowpods"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Handler: "nohandler"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	col := podstartup.NewCollector(c, ns, "", clock.RealClock{}, 0)
	if err := col.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer col.Stop()
	pod := func(name string, f func(*corev1.Pod)) {
		zero := int64(0)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "c", Image: lab.AgentImage, ImagePullPolicy: corev1.PullNever, Args: agentproto.Pause{}.Args()}}}}
		f(p)
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("unschedulable", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")}
	})
	broken := "broken"
	pod("sandbox-fails", func(p *corev1.Pod) { p.Spec.NodeName, p.Spec.RuntimeClassName = lab.RealNodeName(1), &broken })
	pod("healthy", func(p *corev1.Pod) { p.Spec.NodeName = lab.RealNodeName(2) })
	// Wait (on the collector's own notifications) until each slow pod has its Event and the healthy pod runs.
	classOf := func(name string) string {
		tl, _ := col.Timeline(name)
		for _, e := range tl.Events {
			return e.Class.String()
		}
		return ""
	}
	for {
		hl, _ := col.Timeline("healthy")
		if classOf("unschedulable") != "" && classOf("sandbox-fails") != "" && !hl.SeenRunning.IsZero() {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("events not seen: unschedulable %q, sandbox-fails %q, healthy running %v", classOf("unschedulable"), classOf("sandbox-fails"), !hl.SeenRunning.IsZero())
		case <-col.Changed():
		}
	}
	res := podstartup.Analyze(podstartup.Input{Timelines: col.Timelines(), SLO: podstartup.DefaultSLO, Creator: "others"})
	rep := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Results: []result.Result{res}}
	rep.Findings, rep.Rules = rule.Evaluate(rep, check.Rules())
	for _, f := range rep.Findings {
		t.Logf("events: finding %s (explained by %q): %s", f.ID, f.ExplainedBy, f.Summary)
	}
	ev := finding(rep, podstartup.EventsRuleID)
	if ev == nil {
		t.Fatal("KS-POD-EVENTS not reported")
	}
	keys := map[string]bool{}
	for _, it := range ev.Items {
		keys[it.Key] = true
	}
	for _, want := range []string{"class=FailedScheduling: Insufficient cpu", "class=FailedCreatePodSandBox: RuntimeClass handler"} {
		if !keys[want] {
			t.Errorf("KS-POD-EVENTS lacks %s: %+v", want, ev.Items)
		}
	}
	if s := res.Metric(podstartup.MetricSlowPods, nil); s == nil || s.Value != 2 {
		t.Errorf("slow pods %+v, want 2 (the healthy pod is not one)", s)
	}
	if st := finding(rep, "KS-POD-STUCK"); st == nil || st.ExplainedBy != podstartup.EventsRuleID || !strings.Contains(st.Summary, "events on the 2 slow pods") {
		t.Errorf("KS-POD-STUCK does not carry the events under KS-POD-EVENTS: %+v", st)
	}
	col.Stop()
	events := res

	// 2. DNS 5 s.
	lookups := func(phase string) *result.Report {
		o := dnslookup.DefaultOptions()
		o.Image = lab.AgentImage
		rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: rc, Name: "lab", Lab: true},
			Measurements: []measure.Measurement{dnslookup.New(o)}, Rules: check.Rules(), Progress: t.Logf, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Result(dnslookup.Name)
		if r == nil || r.Status != result.StatusPass {
			t.Fatalf("%s: dns.lookups not measured: %+v", phase, r)
		}
		for _, m := range r.Metrics {
			if m.Name == dnslookup.MetricNearTimeoutShare || m.Name == dnslookup.MetricLookups || m.Name == "lookup_seconds_p50" {
				t.Logf("%s: %s %s = %g", phase, m.Name, m.Labels["client_node"], m.Value)
			}
		}
		return rep
	}
	if f := finding(lookups("healthy"), dnslookup.FiveSecondsRuleID); f != nil {
		t.Errorf("healthy: %s: %s", f.ID, f.Summary)
	}
	nft := func(ruleset string) {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", lab.RealNodeNetNS(1), "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(ruleset)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft: %v: %s", err, out)
		}
	}
	const table = "table ip ks_dns_fault"
	for _, m := range []struct{ name, match string }{
		// One packet in two to the DNS Service dropped before kube-proxy's DNAT.
		{"nth-drop", "numgen inc mod 2 == 0"},
		// AAAA queries for kubernetes.default.svc.cluster.local. dropped (its QTYPE at a fixed offset: the UDP header, the
		// DNS header, a 38-byte name): a DNS path that silently loses one record type.
		{"aaaa-drop", "@th,464,16 28"},
	} {
		nft(table + " {\n chain pre {\n  type filter hook prerouting priority -300; policy accept;\n  ip daddr " + lab.ClusterDNSIP + " udp dport 53 " + m.match + " drop\n }\n}\n")
		rep := lookups(m.name)
		nft("delete " + table + "\n")
		if m.name == "nth-drop" {
			twoFaults(t, events, *rep.Result(dnslookup.Name))
		}
		f := finding(rep, dnslookup.FiveSecondsRuleID)
		if f == nil {
			t.Errorf("%s: KS-DNS-5S not reported", m.name)
			continue
		}
		t.Logf("%s: %s", m.name, f.Summary)
		// Half the lookups lose a query (nth-drop: about every lookup loses one of its two; aaaa-drop: every
		// other lookup is of the name whose AAAA is dropped): far above the 1% threshold.
		if sh := rep.Result(dnslookup.Name).Metric(dnslookup.MetricNearTimeoutShare, map[string]string{"client_node": lab.RealNodeName(1)}); sh == nil || sh.Value < 0.3 {
			t.Errorf("%s: share near the time-out on %s %+v, want >= 30%%", m.name, lab.RealNodeName(1), sh)
		}
		if f.Items[0].Key != "client_node="+lab.RealNodeName(1) {
			t.Errorf("%s: items %+v, want %s first", m.name, f.Items, lab.RealNodeName(1))
		}
		for _, it := range f.Items {
			if it.Key == "client_node="+lab.RealNodeName(2) {
				t.Errorf("%s: %s, whose path was not touched, reported", m.name, lab.RealNodeName(2))
			}
		}
	}
}

// twoFaults evaluates the two unrelated faults of the lab at once (the slow pods' Events, the dropped DNS
// queries): the report leads with the Events' cause, KS-POD-STUCK under it, and KS-DNS-5S, whose causes
// (the conntrack race, a full table) were not measured here, follows, saying that no cause was found.
func twoFaults(t *testing.T, pods, dns result.Result) {
	rep := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Results: []result.Result{pods, dns}}
	rep.Findings, rep.Rules = rule.Evaluate(rep, check.Rules())
	var order []string
	for _, n := range report.CausalOrder(rep.Findings) {
		s := n.Finding.ID
		for _, sym := range n.Symptoms {
			s += ">" + sym.Finding.ID
		}
		order = append(order, s)
	}
	t.Logf("two faults: %v", order)
	if len(order) != 2 || order[0] != podstartup.EventsRuleID+">KS-POD-STUCK" || order[1] != dnslookup.FiveSecondsRuleID {
		t.Errorf("two faults: causal order %v", order)
	}
	if f := finding(rep, dnslookup.FiveSecondsRuleID); f == nil || !strings.HasPrefix(f.NoCause, "no cause found among the measured signals") {
		t.Errorf("two faults: KS-DNS-5S does not say no cause was found: %+v", f)
	}
}
