package promwindow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/internal/source/promql/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The node rules from history: the fixture hosts the node sweep's rules are tested on (internal/source/agent/testdata/
// hosts) are read by the real node_exporter (Debian's prometheus-node-exporter, --path.procfs/--path.sysfs on
// the fixture tree), its scrapes backfilled into a real Prometheus, and read back by nodes.agent from
// Prometheus: the same rules fire on the same thresholds as on the live agent's reading of the same trees.

const scrapeEvery = 15 * time.Second

// nodeExporter runs the real node_exporter on a scratch host tree (the fixture copied in before each scrape).
type nodeExporter struct {
	dir, url string
}

func startNodeExporter(t *testing.T) *nodeExporter {
	t.Helper()
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		t.Skipf("prometheus-node-exporter is not installed (hack/deps.sh installs it): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	dir := t.TempDir()
	for _, d := range []string{"proc", "sys", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--path.procfs="+dir+"/proc", "--path.sysfs="+dir+"/sys", "--path.rootfs="+dir+"/root", "--web.listen-address="+addr,
		"--collector.disable-defaults", "--collector.conntrack", "--collector.pressure", "--collector.arp", "--collector.loadavg",
		"--collector.meminfo", "--collector.uname")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ne := &nodeExporter{dir: dir, url: "http://" + addr + "/metrics"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(ne.url)
		if err == nil {
			_ = resp.Body.Close()
			return ne
		}
		if time.Now().After(deadline) {
			t.Fatalf("node_exporter did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var psiTotal = regexp.MustCompile(`(?m)^(some|full) avg10=\S+ avg60=(\S+) avg300=\S+ total=(\d+)$`)

// scrape copies fixture host tree into the exporter's root with its PSI stall counters advanced by elapsed at
// the tree's own avg60 (a pressure held for that long), and returns node_exporter's answer.
func (ne *nodeExporter) scrape(t *testing.T, tree string, elapsed time.Duration) []byte {
	t.Helper()
	src := filepath.Join("../../source/agent/testdata/hosts", tree)
	for _, d := range []string{"proc", "sys", "root"} {
		_ = os.RemoveAll(filepath.Join(ne.dir, d))
		if err := os.CopyFS(filepath.Join(ne.dir, d), os.DirFS(filepath.Join(src, d))); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []string{"cpu", "io", "memory"} {
		p := filepath.Join(ne.dir, "proc/pressure", r)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = psiTotal.ReplaceAllFunc(b, func(line []byte) []byte {
			m := psiTotal.FindSubmatch(line)
			avg60, _ := strconv.ParseFloat(string(m[2]), 64)
			total, _ := strconv.ParseInt(string(m[3]), 10, 64)
			total += int64(avg60 / 100 * float64(elapsed.Microseconds()))
			return []byte(strings.Replace(string(line), "total="+string(m[3]), "total="+strconv.FormatInt(total, 10), 1))
		})
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(ne.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// liveSweep is the live node agent's analysis of the same fixture trees.
func liveSweep(t *testing.T, hosts map[string]string) result.Result {
	var hs []agent.NodeHost
	for node, tree := range hosts {
		r := filepath.Join("../../source/agent/testdata/hosts", tree)
		o := agent.NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root", Window: 10 * time.Millisecond, NodeName: node}
		if _, err := os.Stat(r + "/proc-after"); err == nil {
			o.PressureAfter = r + "/proc-after" // the PSI counters at the watch's end
		}
		h := agent.ReadNodeHost(context.Background(), o)
		hs = append(hs, *h)
	}
	return nodeagent.Analyze(hs, nil)
}

// status is each rule's evaluation in rep.
func status(rep *result.Report) map[string]result.RuleEvaluation {
	_, evals := rule.Evaluate(rep, check.Rules())
	out := map[string]result.RuleEvaluation{}
	for _, e := range evals {
		out[e.ID] = e
	}
	return out
}

func TestNodeRulesFromHistory(t *testing.T) {
	ne := startNodeExporter(t)
	for _, c := range []struct {
		name  string
		hosts map[string]string
		fire  []string
	}{
		{"faulty", map[string]string{"n1": "healthy", "n2": "neigh-overflow", "n3": "hung-io"}, []string{"KS-NODE-CONNTRACK-ALL", "KS-NODE-IO-PRESSURE"}},
		{"healthy", map[string]string{"n1": "healthy", "n2": "neigh-near", "n3": "healthy"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
			var scrapes []promtest.Scrape
			for at := t0; !at.After(t0.Add(3 * time.Minute)); at = at.Add(scrapeEvery) {
				for node, tree := range c.hosts {
					scrapes = append(scrapes, promtest.Scrape{At: at, Text: ne.scrape(t, tree, at.Sub(t0)),
						Labels: map[string]string{"job": "node-exporter", "instance": node}})
				}
			}
			url := promtest.Start(t, scrapes)
			src := source(t, url, t0, t0.Add(3*time.Minute), nil)
			fromProm := run(t, NewAgent(src))
			live := liveSweep(t, c.hosts)

			// The readings node_exporter exports equal the live agent's (pressure: the live agent's avg60, held).
			for _, name := range []string{nodeagent.MetricConntrackUsage, nodeagent.MetricIOPressureFull, nodeagent.MetricIOPressureSome, nodeagent.MetricCPUPressureSome} {
				for node := range c.hosts {
					l, p := live.Metric(name, map[string]string{"node": node}), fromProm.Metric(name, map[string]string{"node": node})
					if l == nil || p == nil || math.Abs(l.Value-p.Value) > 0.01*math.Max(1, l.Value) {
						t.Errorf("%s on %s: live %+v, Prometheus %+v", name, node, l, p)
					}
				}
			}
			promEv := status(&result.Report{Results: []result.Result{fromProm}})
			liveEv := status(&result.Report{Results: []result.Result{live}})
			var fired []string
			for id, e := range promEv {
				if e.Status == result.RuleFired {
					fired = append(fired, id)
				}
			}
			sort.Strings(fired)
			if strings.Join(fired, ",") != strings.Join(c.fire, ",") {
				t.Fatalf("fired from Prometheus %v, want %v", fired, c.fire)
			}
			for _, id := range c.fire {
				if liveEv[id].Status != result.RuleFired {
					t.Errorf("%s fires from Prometheus but not live: %s %s", id, liveEv[id].Status, liveEv[id].Reason)
				}
			}
			// What node_exporter lacks is not evaluated, naming the series; never clear.
			for _, id := range []string{"KS-NODE-NEIGH-ALL", "KS-NODE-DSTATE", "KS-NODE-DISK-SYNC", "KS-NODE-DISK-SPINNING", "KS-NODE-HUNG"} {
				if e := promEv[id]; e.Status != result.RuleNotEvaluated || !strings.Contains(e.Reason, "absent: series") {
					t.Errorf("%s from Prometheus: %s (%s), want not evaluated naming the absent series", id, e.Status, e.Reason)
				}
			}
			// Each finding says the series' job and the window.
			fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{fromProm}}, check.Rules())
			for _, f := range fs {
				series := map[string]string{"KS-NODE-CONNTRACK-ALL": "node_nf_conntrack_entries", "KS-NODE-IO-PRESSURE": "node_pressure_io_stalled_seconds_total"}[f.ID]
				if ev := f.Evidence[0]; !strings.Contains(ev.Labels["prometheus"], `job "node-exporter"`) || !strings.Contains(ev.Labels["prometheus"], t0.UTC().Format("15:04")) ||
					!strings.Contains(ev.Labels["prometheus"], series) {
					t.Errorf("%s evidence without its series and window: %+v", f.ID, ev)
				}
				t.Logf("%s: %s", f.ID, f.Summary)
			}
		})
	}
}

// kubeletScrapes are scrapes every 15 s of four kubelets: each starts 4 pods a scrape (the pod start-up SLI at
// startS[node] seconds), creates containers in 20 ms and relists in 4 ms.
func kubeletScrapes(t0 time.Time, startS map[string]float64) []promtest.Scrape {
	startBounds := []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, math.Inf(1)}
	opBounds := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, math.Inf(1)}
	bucket := func(bounds []float64, v float64) int {
		for i, b := range bounds {
			if v <= b {
				return i
			}
		}
		return len(bounds) - 1
	}
	var out []promtest.Scrape
	for i := 0; i <= 12; i++ {
		at := t0.Add(time.Duration(i) * scrapeEvery)
		for _, node := range []string{"n1", "n2", "n3", "n4"} {
			starts := make([]float64, len(startBounds))
			ops := make([]float64, len(opBounds))
			relist := make([]float64, len(opBounds))
			n := float64(4 * i)
			starts[bucket(startBounds, startS[node])] = n
			ops[bucket(opBounds, 0.02)] = n
			relist[bucket(opBounds, 0.004)] = float64(i)
			var b strings.Builder
			b.WriteString("# TYPE kubelet_node_name gauge\n")
			fmt.Fprintf(&b, "kubelet_node_name{node=%q} 1\n", node)
			b.WriteString("# TYPE kubelet_pod_start_sli_duration_seconds histogram\n")
			histText(&b, "kubelet_pod_start_sli_duration_seconds", "", startBounds, starts, n*startS[node])
			b.WriteString("# TYPE kubelet_runtime_operations_duration_seconds histogram\n")
			histText(&b, "kubelet_runtime_operations_duration_seconds", `operation_type="create_container"`, opBounds, ops, n*0.02)
			// Pulls (past 1 s, as image pulls are) are left out of the runtime's p99, live and from Prometheus alike.
			pulls := make([]float64, len(opBounds))
			pulls[len(opBounds)-1] = float64(i)
			histText(&b, "kubelet_runtime_operations_duration_seconds", `operation_type="pull_image"`, opBounds, pulls, float64(i)*30)
			b.WriteString("# TYPE kubelet_pleg_relist_duration_seconds histogram\n")
			histText(&b, "kubelet_pleg_relist_duration_seconds", "", opBounds, relist, float64(i)*0.004)
			b.WriteString("# TYPE kubelet_runtime_operations_errors_total counter\n")
			b.WriteString("kubelet_runtime_operations_errors_total{operation_type=\"pull_image\"} 0\n")
			out = append(out, promtest.Scrape{At: at, Text: []byte(b.String()), Labels: map[string]string{"job": "kubelet", "instance": node}})
		}
	}
	return out
}

// TestKubeletRulesFromHistory: nodes.kubelet from Prometheus is the live analysis of the kubelets' histograms
// over the window; the start-up outlier rule fires on the node whose pods start at 9 s when the others take 1 s,
// and stays clear when all are slow alike; the rule reading the kubelet's configuration is not evaluated.
func TestKubeletRulesFromHistory(t *testing.T) {
	for _, c := range []struct {
		name   string
		startS map[string]float64
		fire   bool
	}{
		{"outlier", map[string]float64{"n1": 1, "n2": 1, "n3": 9, "n4": 1}, true},
		{"alike", map[string]float64{"n1": 8, "n2": 9, "n3": 9, "n4": 8}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
			scrapes := kubeletScrapes(t0, c.startS)
			url := promtest.Start(t, scrapes)
			src := source(t, url, t0, t0.Add(3*time.Minute), nil)
			fromProm := run(t, NewKubelet(src))

			// The live analysis of the last scrapes (their counts are the window's: they start from zero).
			var nodes []kubelet.Node
			for _, s := range scrapes[len(scrapes)-4:] {
				nodes = append(nodes, kubelet.Node{Name: s.Labels["instance"], Config: &kubelet.Config{}, Metrics: parse(t, s.Text, s.At)})
			}
			live := kubelet.Analyze(nodes, nil, errors.New("not read"))
			for _, m := range live.Metrics {
				if configMetrics[m.Name] {
					continue
				}
				p := fromProm.Metric(m.Name, m.Labels)
				if p == nil || math.Abs(p.Value-m.Value) > 1e-6*math.Max(1, m.Value) {
					t.Errorf("%s %v: live %g, Prometheus %+v", m.Name, m.Labels, m.Value, p)
				}
			}
			ev := status(&result.Report{Results: []result.Result{fromProm}})
			if got := ev["KS-NODE-START-OUTLIER"].Status == result.RuleFired; got != c.fire {
				t.Fatalf("KS-NODE-START-OUTLIER: %s %s", ev["KS-NODE-START-OUTLIER"].Status, ev["KS-NODE-START-OUTLIER"].Reason)
			}
			if e := ev["KS-NODE-SERIAL-PULLS"]; e.Status != result.RuleNotEvaluated || !strings.Contains(e.Reason, "configz") {
				t.Errorf("KS-NODE-SERIAL-PULLS from Prometheus: %s (%s)", e.Status, e.Reason)
			}
			if c.fire {
				fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{fromProm}}, check.Rules())
				for _, f := range fs {
					if f.ID == "KS-NODE-START-OUTLIER" && (!strings.HasPrefix(f.Items[0].Key, "node=n3") || !strings.Contains(f.Evidence[0].Labels["prometheus"], `job "kubelet"`)) {
						t.Errorf("finding %+v", f)
					}
					t.Logf("%s: %s", f.ID, f.Summary)
				}
			}
		})
	}
}

// TestDNSRulesFromHistory backfills real CoreDNS 1.15 scrapes (dns.facts' recorded fixtures: replica "a"
// forwards to an upstream that drops what passes 100 q/s per source and answers 35% SERVFAIL with a ~4 s p99,
// "b" and "c" do not), a minute apart, and reads dns.facts from Prometheus: its per-replica metrics equal the
// live analysis of the same scrapes, KS-DNS-REPLICA-ERRORS and -SLOW fire on "a" and stay clear without it,
// and the placement rule (API objects, not metrics) is not evaluated.
func TestDNSRulesFromHistory(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas []string
		fire     []string
	}{
		{"one-bad", []string{"a", "b", "c"}, []string{"KS-DNS-REPLICA-ERRORS", "KS-DNS-REPLICA-SLOW"}},
		{"healthy", []string{"b", "c"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
			t1 := t0.Add(time.Minute)
			var scrapes []promtest.Scrape
			f := dnsfacts.Facts{Server: "CoreDNS", Window: time.Minute}
			for _, r := range c.replicas {
				labels := map[string]string{"job": "coredns", "instance": "coredns-" + r + ":9153"}
				before := fixtureFile(t, "../dnsfacts/testdata/recorded-"+r+"-before.txt")
				after := fixtureFile(t, "../dnsfacts/testdata/recorded-"+r+"-after.txt")
				scrapes = append(scrapes, promtest.Scrape{At: t0, Text: before, Labels: labels}, promtest.Scrape{At: t1, Text: after, Labels: labels})
				f.Replicas = append(f.Replicas, dnsfacts.Replica{Pod: labels["instance"], Node: dnsUnknownNode, Ready: true,
					Before: parse(t, before, t0), After: parse(t, after, t1)})
			}
			url := promtest.Start(t, scrapes)
			src := source(t, url, t0, t1, nil)
			fromProm := run(t, NewDNS(src))
			live := dnsfacts.Analyze(f)
			for _, m := range live.Metrics {
				if dnsPlacement[m.Name] {
					continue
				}
				p := fromProm.Metric(m.Name, m.Labels)
				if p == nil || math.Abs(p.Value-m.Value) > 1e-6*math.Max(1, math.Abs(m.Value)) {
					t.Errorf("%s %v: live %g, Prometheus %+v", m.Name, m.Labels, m.Value, p)
				}
			}
			ev := status(&result.Report{Results: []result.Result{fromProm}})
			var fired []string
			for id, e := range ev {
				if e.Status == result.RuleFired {
					fired = append(fired, id)
				}
			}
			sort.Strings(fired)
			if strings.Join(fired, ",") != strings.Join(c.fire, ",") {
				t.Fatalf("fired from Prometheus %v, want %v", fired, c.fire)
			}
			if e := ev["KS-DNS-HOTSPOT"]; e.Status != result.RuleNotEvaluated || !strings.Contains(e.Reason, "absent") {
				t.Errorf("KS-DNS-HOTSPOT from Prometheus: %s (%s)", e.Status, e.Reason)
			}
			fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{fromProm}}, check.Rules())
			for _, f := range fs {
				if ev := f.Evidence[0]; !strings.Contains(ev.Labels["prometheus"], `job "coredns"`) || !strings.Contains(ev.Labels["pod"], "coredns-a") {
					t.Errorf("%s evidence: %+v", f.ID, ev)
				}
				t.Logf("%s: %s", f.ID, f.Summary)
			}
		})
	}
}

func fixtureFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTargetFirstScrapedInWindow: etcd first scraped inside the window brings its leader-change counter at 1
// (its own first election, before the window): that is not the window's, so KS-ETCD-LEADER stays clear. (A
// counter born inside the window on a target scraped before it counts from zero: TestDNSRulesFromHistory.)
func TestTargetFirstScrapedInWindow(t *testing.T) {
	s := newStorm(t)
	url := promtest.Start(t, []promtest.Scrape{{At: s.t0.Add(10 * time.Second), Text: s.etcd0, Labels: s.etcdLabels}, {At: s.t1, Text: s.etcd1, Labels: s.etcdLabels}})
	src := source(t, url, s.t0, s.t1, nil)
	etcd := run(t, NewEtcd(src))
	if m := etcd.Metric("leader_changes", nil); m == nil || m.Value != 0 {
		t.Fatalf("leader changes %+v, want 0", m)
	}
	if e := status(&result.Report{Results: []result.Result{etcd}})["KS-ETCD-LEADER"]; e.Status != result.RuleClear {
		t.Fatalf("KS-ETCD-LEADER: %s %s", e.Status, e.Reason)
	}
}

// TestKubeletShards: a cluster too large for one answer per histogram is read in batches of kubelets; the
// result is the same as in one query each, and the run's query budget is raised by the extra batches only.
// (A 40-series answer limit stands in for the 2,000 of a real run: 4 kubelets are then "too many".)
func TestKubeletShards(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	url := promtest.Start(t, kubeletScrapes(t0, map[string]float64{"n1": 1, "n2": 1, "n3": 9, "n4": 1}))
	whole := source(t, url, t0, t0.Add(3*time.Minute), nil)
	want := run(t, NewKubelet(whole))
	wq, _ := whole.Client.Cost()

	c, err := promql.New(promql.Options{URL: url, MaxSeries: 40, MaxQueries: wq + 2})
	if err != nil {
		t.Fatal(err)
	}
	sharded := NewSource(c, whole.Window, nil, check.Rules())
	got := run(t, NewKubelet(sharded))
	sameMetrics(t, want, got)
	// 2 queries to list the kubelets and count the buckets; the pod start-up SLI (15 buckets) in batches of 2
	// kubelets, the runtime and PLEG histograms (9) in one, the absent image-pull histogram at the assumed 40
	// buckets one kubelet a batch, the errors counter in one: 9 instead of 5.
	q, _ := c.Cost()
	if q != wq+2+4 {
		t.Fatalf("sharded run: %d queries, unsharded %d", q, wq)
	}
}
