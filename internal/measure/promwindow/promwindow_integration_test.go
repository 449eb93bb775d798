package promwindow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/lab/storm"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationPrometheusWindow starts a lab with its Prometheus, lets a healthy minute pass, injects a
// conflict storm and then a LIST storm; then `kubeslow run --prometheus --from --to`, as a user runs it, names
// each storm over its past window (KS-API-409 with its series and window; KS-API-LIST-BYTES on events, without
// the conflict storm's KS-API-409), finds nothing in the healthy minute before them, and finds the exporters of
// the lab's real node (kubelet, cAdvisor, CoreDNS, node_exporter) by their series. The lab's Prometheus
// evaluates `kubeslow rules` (alertRate rate window, for: 10s): KS_API_409 fires during the conflict storm and
// not before, and clears after it; KS_API_LIST_BYTES fires during the list storm.
//
// The windows are as short as their evidence allows (each run's window is promql.MinWindow, the shortest a run
// diagnoses), one after the other, none seeing another's storm (measured on the lab, 2026-11-29):
//   - healthy: [healthyFrom, faultFrom-2s], after the Events of the list storm are seeded;
//   - fault: the conflict storm runs conflictStorm (30 s); its run's window ends 5 s after it and starts 5 s
//     before it, or earlier, in the quiet minute, to be MinWindow long: 1,666-1,857 409s a minute over the
//     window, 28-31 times the rule's 60; KS_API_409 fired 23-24 s after faultFrom, where the check allows 43;
//   - list: from the fault window's end, MinWindow long, the list storm filling it up to 5 s before its end:
//     1.95-2.07 MB/s of LIST bytes on events over the window, 1.9 times the rule's 1 MiB/s (as with a minute's
//     storm and a 70 s window); KS_API_LIST_BYTES fired 26-30 s into the 54 s storm. It ends 64 s after the
//     conflict storm, past the alertRate + 15 s by which KS_API_409 must have cleared (it stopped firing 29-30 s
//     after the storm).
//
// ~184 s on the lab, lab up included; until 2026-11-29 the storms were a minute each, 15 s apart, with a 1m rate
// window and the Events seeded between them (~230 s).
func TestIntegrationPrometheusWindow(t *testing.T) {
	d := labtest.Dirs(t)
	bin := labtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	// The lab's Prometheus evaluates kubeslow's generated alerting rules, as a user's would: `kubeslow rules`
	// with a short rate window and a 10 s for:, so that an alert fires within the storm and clears within the
	// test.
	rules, err := exec.CommandContext(ctx, bin, "rules", "--format", "prometheus", "--for", "10s", "--rate-window", alertRate.String()).Output()
	if err != nil {
		t.Fatalf("kubeslow rules: %v", err)
	}
	var upAt time.Time
	rc, down := labtest.Up(t, d, func() error {
		_, err := lab.Up(ctx, d, lab.Config{Nodes: 2, RealNodes: 1, AgentBinary: bin, Prometheus: true, PrometheusRules: string(rules)}, t.Logf)
		upAt = time.Now()
		return err
	})
	defer down()
	pc, err := promql.New(promql.Options{URL: lab.PrometheusURL(), MaxQueries: 10000})
	if err != nil {
		t.Fatal(err)
	}
	machineStall := labtest.SampleIOStall(ctx, t, 5*time.Second)
	// The list storm's Events are seeded first, while Prometheus takes its first scrapes, so that each LIST is
	// large: the healthy window starts after them.
	seedCfg := rest.CopyConfig(rc)
	seedCfg.QPS, seedCfg.Burst = 500, 500
	seeder, err := kubernetes.NewForConfig(seedCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := storm.SeedEvents(ctx, seeder, listSeed); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d Events in %s", listSeed, time.Since(upAt).Round(100*time.Millisecond))

	// The healthy window, from a whole second at least 5 s after Prometheus started (its first scrapes).
	healthyFrom := stats.Later(time.Now(), upAt.Add(5*time.Second)).Truncate(time.Second).Add(time.Second)
	faultFrom := healthyFrom.Add(promql.MinWindow + 2*time.Second)
	waitScraped(ctx, t, pc, faultFrom)
	counts, err := storm.Conflicts(ctx, rc, storm.ConflictOptions{Clients: 8, Blocks: 2, QPS: 20, UserAgent: scenario.ConflictStormUserAgent,
		Duration: conflictStorm}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	faultTo := time.Now()
	t.Logf("conflict storm %s..%s: %s", faultFrom.Format(time.TimeOnly), faultTo.Format(time.TimeOnly), counts)
	faultWinTo := faultTo.Add(5 * time.Second)
	faultWinFrom := windowFrom(faultFrom.Add(-5*time.Second), faultWinTo)

	// The second fault, another mechanism: a LIST storm (case B's monitoring agent re-reading all Events),
	// once Prometheus has the fault window's end, until 5 s before the end of its own window.
	waitScraped(ctx, t, pc, faultWinTo)
	listWinFrom := faultWinTo.Truncate(time.Second)
	listWinTo := listWinFrom.Add(promql.MinWindow)
	listFrom := time.Now()
	lists, err := storm.ListEvents(ctx, rc, storm.ListOptions{Clients: 20, Interval: time.Second, UserAgent: scenario.ListStormUserAgent,
		Duration: listWinTo.Add(-5 * time.Second).Sub(listFrom)}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	listTo := time.Now()
	t.Logf("list storm over %d Events %s..%s: %s", listSeed, listFrom.Format(time.TimeOnly), listTo.Format(time.TimeOnly), lists)
	// KS_API_409 has cleared alertRate + 15 s after the conflict storm (see checkAlerts): at the list window's
	// end, or later if that came sooner.
	cleared := stats.Later(listTo.Add(5*time.Second), faultTo.Add(alertRate+15*time.Second))
	waitScraped(ctx, t, pc, stats.Later(listTo.Add(10*time.Second), cleared.Add(5*time.Second)))
	checkAlerts(ctx, t, pc, healthyFrom, faultFrom, faultTo, listFrom, listTo, cleared)

	run := func(from, to time.Time) (*result.Report, int) {
		cmd := exec.CommandContext(ctx, bin, "run", "--prometheus", lab.PrometheusURL(), "--from", from.UTC().Format(time.RFC3339),
			"--to", to.UTC().Format(time.RFC3339), "-o", "json", "--out-dir", "")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("run --prometheus %s..%s: exit %d\n%s", from.Format(time.TimeOnly), to.Format(time.TimeOnly), code, errb.String())
		rep, err := result.Decode(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("report: %v\n%s", err, out.String())
		}
		return rep, code
	}

	rep, code := run(faultWinFrom, faultWinTo)
	var conflict *result.Finding
	for i, f := range rep.Findings {
		t.Logf("fault window: %s %s", f.ID, f.Summary)
		if f.ID == "KS-API-409" {
			conflict = &rep.Findings[i]
		}
	}
	if conflict == nil || code != 1 {
		t.Fatalf("fault window: exit %d, no KS-API-409 (findings %v)", code, ids(rep))
	}
	if ev := conflict.Evidence[0]; ev.Labels["resource"] != "ipamblocks" || !strings.Contains(ev.Labels["prometheus"], `job "lab-apiserver"`) ||
		!strings.Contains(ev.Labels["prometheus"], faultWinFrom.UTC().Format("15:04:05")) {
		t.Fatalf("KS-API-409 evidence does not name the resource, series and window: %+v", ev)
	}
	api := rep.Result("api.responsiveness")
	if api == nil || len(api.Series) == 0 {
		t.Fatalf("no time profiles: %+v", api)
	}
	onset := false
	for _, s := range api.Series {
		for _, m := range s.Marks {
			onset = onset || (s.Name == "conflicts_per_minute" && !m.T.Before(faultFrom.Add(-time.Minute)) && !m.T.After(faultTo))
		}
	}
	if !onset {
		t.Fatalf("no onset of the 409 rate within the fault: %+v", api.Series)
	}
	src := rep.Result(promwindow.SourcesName)
	if src == nil {
		t.Fatal("no prometheus.sources result")
	}
	for _, want := range []string{`apiserver (job "lab-apiserver"`, `etcd (job "lab-etcd"`, `kubelet (job "lab-kubelet"`, `cadvisor (job "lab-cadvisor"`,
		`node-exporter (job "lab-node-exporter"`, `coredns (job "lab-coredns"`, `scheduler (job "lab-scheduler"`} {
		if !strings.Contains(src.Reason, want) {
			t.Errorf("sources do not name %s: %s", want, src.Reason)
		}
	}
	nodes := rep.Result(promwindow.NodesName)
	if nodes == nil || !nodes.Status.Measured() || nodes.Metric("cpu_cores", map[string]string{"component": "scheduler"}) == nil {
		t.Errorf("nodes.prometheus: %+v", nodes)
	}
	// controlplane.usage: kube-apiserver's and etcd's CPU against the control-plane host's CPUs (node_exporter on
	// the lab's control-plane address), and KS-CP-SATURATED evaluated (clear: the host's CPUs, no quota).
	cp := rep.Result("controlplane.usage")
	if cp == nil || !cp.Status.Measured() || cp.Metric("cpu_cores_busiest", nil) == nil || cp.Metric("cores_available", nil) == nil ||
		!strings.HasPrefix(cp.Metric("cores_available", nil).Labels["source"], promwindow.CoresNodeCPUs) {
		t.Errorf("controlplane.usage from Prometheus: %+v", cp)
	}
	for _, e := range rep.Rules {
		// cAdvisor is scraped and no kube-system container runs under a CPU limit: evaluated, clear.
		if e.ID == "KS-SYSTEM-THROTTLED" && e.Status != result.RuleClear {
			t.Errorf("KS-SYSTEM-THROTTLED from Prometheus: %s %s", e.Status, e.Reason)
		}
		if e.ID == "KS-CP-SATURATED" && e.Status != result.RuleClear {
			t.Errorf("KS-CP-SATURATED on the host's CPUs: %s %s", e.Status, e.Reason)
		}
	}

	// The node-side readings come from the lab's node_exporter and kubelet through the live analyses.
	agentRes, kubeletRes := rep.Result("nodes.agent"), rep.Result("nodes.kubelet")
	if agentRes == nil || !agentRes.Status.Measured() || agentRes.Metric("conntrack_usage", nil) == nil || agentRes.Metric("io_pressure_full_avg60", nil) == nil {
		t.Errorf("nodes.agent from Prometheus: %+v", agentRes)
	}
	if kubeletRes == nil || !kubeletRes.Status.Measured() || kubeletRes.Metric("nodes_read", nil) == nil {
		t.Errorf("nodes.kubelet from Prometheus: %+v", kubeletRes)
	}
	for _, e := range rep.Rules {
		if e.ID == "KS-NODE-NEIGH-ALL" && (e.Status != result.RuleNotEvaluated || !strings.Contains(e.Reason, "gc_thresh3")) {
			t.Errorf("KS-NODE-NEIGH-ALL from Prometheus: %s %s", e.Status, e.Reason)
		}
	}
	if tl := rep.Result(promwindow.TimelineName); tl != nil {
		t.Logf("cost: %v queries, %v samples", tl.Metric("queries", nil).Value, tl.Metric("samples", nil).Value)
	}

	rep, code = run(listWinFrom, listWinTo)
	got := ids(rep)
	if api := rep.Result("api.responsiveness"); api != nil {
		for _, m := range api.Metrics {
			if strings.HasPrefix(m.Name, "list_bytes") {
				t.Logf("list window: %s %v = %g", m.Name, m.Labels, m.Value)
			}
		}
	}
	t.Logf("list window: exit %d, findings %v", code, got)
	if !slices.Contains(got, "KS-API-LIST-BYTES") || slices.Contains(got, "KS-API-409") || code != 1 {
		t.Fatalf("list-storm window: exit %d, findings %v, want KS-API-LIST-BYTES and not the earlier storm's KS-API-409", code, got)
	}
	for _, f := range rep.Findings {
		if f.ID == "KS-API-LIST-BYTES" && (f.Evidence[0].Labels["resource"] != "events" || !strings.Contains(f.Evidence[0].Labels["prometheus"], `job "lab-apiserver"`)) {
			t.Fatalf("KS-API-LIST-BYTES evidence does not name events and its series: %+v", f.Evidence)
		}
	}

	rep, code = run(healthyFrom, faultFrom.Add(-2*time.Second))
	// The lab's nodes are this machine: node_exporter's pressure is the machine's, which other work on it
	// drives. An I/O pressure finding in the healthy window is allowed only when the test's own reading of
	// /proc/pressure/io saw the machine stall that much in that window.
	var healthyFindings []string
	for _, f := range rep.Findings {
		// Its rate window is a minute (the profiles' R): the machine's worst minute, read from a minute before.
		if !machineStall.Explains(t, f, healthyFrom.Add(-time.Minute), faultFrom.Add(time.Minute), 55*time.Second) {
			healthyFindings = append(healthyFindings, f.ID)
		}
	}
	if len(healthyFindings) != 0 || (code != 0 && len(rep.Findings) == 0) {
		t.Fatalf("healthy window before the fault: exit %d, findings %v", code, ids(rep))
	}
	for _, e := range rep.Rules {
		if e.ID == "KS-API-409" && e.Status != result.RuleClear {
			t.Fatalf("KS-API-409 in the healthy window: %s %s", e.Status, e.Reason)
		}
	}
}

// checkAlerts: the generated alert of each storm fired in the lab's Prometheus while it ran (ALERTS, firing),
// the conflict storm's not before it, and cleared by cleared: once its rate window (alertRate) has passed the
// storm's end, its condition fails at the next evaluation (every 5 s) and a check looking 10 s back sees no
// firing sample: alertRate + 15 s after the storm.
func checkAlerts(ctx context.Context, t *testing.T, pc *promql.Client, healthyFrom, faultFrom, faultTo, listFrom, listTo, cleared time.Time) {
	t.Helper()
	firing := func(alert string, at time.Time, over time.Duration) bool {
		q := fmt.Sprintf(`max(max_over_time(ALERTS{alertname=%q,alertstate="firing"}[%ds]))`, alert, int(over.Seconds()))
		v, err := pc.Instant(ctx, q, at)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return len(v) > 0 && v[0].Value == 1
	}
	if firing("KS_API_409", faultFrom, faultFrom.Sub(healthyFrom)) {
		t.Error("KS_API_409 fired in the lab's Prometheus before the conflict storm")
	}
	if !firing("KS_API_409", faultTo.Add(10*time.Second), faultTo.Add(10*time.Second).Sub(faultFrom)) {
		t.Error("KS_API_409 did not fire in the lab's Prometheus during the conflict storm")
	}
	if firing("KS_API_409", cleared, 10*time.Second) {
		t.Errorf("KS_API_409 still firing %s after the conflict storm ended (its rate window is %s)", cleared.Sub(faultTo).Round(time.Second), alertRate)
	} else {
		t.Logf("lab Prometheus: KS_API_409 not firing before the storm, firing during it, cleared %s after it", cleared.Sub(faultTo).Round(time.Second))
	}
	if !firing("KS_API_LIST_BYTES", listTo.Add(10*time.Second), listTo.Add(10*time.Second).Sub(listFrom)) {
		t.Error("KS_API_LIST_BYTES did not fire in the lab's Prometheus during the list storm")
	}
	// The margins, for the log: when each alert fired and stopped.
	for _, a := range []struct {
		name     string
		from, to time.Time
	}{{"KS_API_409", faultFrom, faultTo}, {"KS_API_LIST_BYTES", listFrom, listTo}} {
		end := time.Now()
		m, err := pc.Range(ctx, fmt.Sprintf(`max(ALERTS{alertname=%q,alertstate="firing"})`, a.name),
			v1.Range{Start: healthyFrom, End: end, Step: time.Second})
		if err != nil || len(m) == 0 || len(m[0].Values) == 0 {
			t.Logf("lab Prometheus: %s firing: never (%v)", a.name, err)
			continue
		}
		first, last := m[0].Values[0].Timestamp.Time(), m[0].Values[len(m[0].Values)-1].Timestamp.Time()
		until := fmt.Sprintf("until %s after it ended", last.Sub(a.to).Round(time.Second))
		if end.Sub(last) < 2*time.Second {
			until = fmt.Sprintf("still at %s after it ended", end.Sub(a.to).Round(time.Second))
		}
		t.Logf("lab Prometheus: %s firing from %s into its storm (of %s), %s", a.name,
			first.Sub(a.from).Round(time.Second), a.to.Sub(a.from).Round(time.Second), until)
	}
}

// alertRate is the rate window of the rules the lab's Prometheus evaluates (`kubeslow rules --rate-window`; users
// keep its default): the shortest `kubeslow rules` takes, six scrapes at the lab's 5 s
// (lab.PrometheusScrapeInterval). The alerts fire and clear that much sooner than with a minute.
const alertRate = 30 * time.Second

// conflictStorm is how long the conflict storm runs: KS_API_409 fires ~20 s into it (two scrapes for a rate, two
// evaluations 10 s apart for its for:), and its ~3,400 409s a minute while it runs stay far over the rule's 60
// over a minute's window.
const conflictStorm = 30 * time.Second

// windowFrom is the start of a run's window that ends at to: from, or earlier so that the window is at least
// promql.MinWindow long (in whole seconds, as the run's --from and --to are written).
func windowFrom(from, to time.Time) time.Time {
	return stats.Earlier(from.Truncate(time.Second), to.Truncate(time.Second).Add(-promql.MinWindow))
}

// listSeed is how many Events the list storm lists each time, as the list-storm scenario seeds (with 600, the
// apiserver's gzip made the LISTs ~0.5 MB/s, under the rule's 1 MiB/s).
const listSeed = 3000

// waitScraped polls the lab Prometheus until its apiserver series has a sample at or after t.
func waitScraped(ctx context.Context, t *testing.T, c *promql.Client, at time.Time) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		v, err := c.Instant(ctx, `max(timestamp(up{job="lab-apiserver"} == 1))`, time.Now())
		switch {
		case err != nil:
			last = err
		case len(v) == 0 || float64(v[0].Value) < float64(at.UnixMilli())/1000:
			last = fmt.Errorf("last apiserver sample %v", v)
		default:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Prometheus did not scrape the apiserver past %s: %v (%v)", at.Format(time.TimeOnly), err, last)
	}
}

func ids(r *result.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.ID)
	}
	return out
}
