package promwindow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/lab/storm"
	"github.com/kubeslow/kubeslow/internal/labtest"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow"
	"github.com/kubeslow/kubeslow/internal/promql"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationPrometheusWindow starts a lab with its Prometheus, lets a healthy minute pass, injects a
// conflict storm for a minute and ends it; then `kubeslow run --prometheus --from --to`, as a user runs it,
// names the storm over the past window (KS-API-409 with its series and window), finds nothing in the healthy
// minute before it, and finds the exporters of the lab's real node (kubelet, cAdvisor, CoreDNS, node_exporter)
// by their series.
func TestIntegrationPrometheusWindow(t *testing.T) {
	d := labtest.Dirs(t)
	bin := labtest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	if _, err := lab.Up(ctx, d, lab.Config{Nodes: 2, RealNodes: 1, AgentBinary: bin, Prometheus: true}, t.Logf); err != nil {
		_ = lab.Down(context.Background(), d, t.Logf)
		t.Fatalf("lab up: %v", err)
	}
	procs := labtest.Processes(t, d)
	defer func() {
		if err := lab.Down(context.Background(), d, t.Logf); err != nil {
			t.Errorf("lab down: %v", err)
		}
		labtest.AssertGone(t, d, procs)
	}()
	pc, err := promql.New(promql.Options{URL: lab.PrometheusURL(), MaxQueries: 10000})
	if err != nil {
		t.Fatal(err)
	}
	healthyFrom := time.Now().Add(5 * time.Second)
	faultFrom := healthyFrom.Add(75 * time.Second)
	waitScraped(ctx, t, pc, faultFrom)

	rc, err := lab.AdminRESTConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := storm.Conflicts(ctx, rc, storm.ConflictOptions{Clients: 8, Blocks: 2, QPS: 20, UserAgent: scenario.ConflictStormUserAgent,
		Duration: time.Minute}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	faultTo := time.Now()
	t.Logf("conflict storm %s..%s: %s", faultFrom.Format(time.TimeOnly), faultTo.Format(time.TimeOnly), counts)
	waitScraped(ctx, t, pc, faultTo.Add(10*time.Second))

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

	rep, code := run(faultFrom.Add(-5*time.Second), faultTo.Add(5*time.Second))
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
		!strings.Contains(ev.Labels["prometheus"], faultFrom.Add(-5*time.Second).UTC().Format("15:04:05")) {
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
	if nodes == nil || !nodes.Status.Measured() || nodes.Metric("cpu_cores", map[string]string{"component": "apiserver"}) == nil {
		t.Errorf("nodes.prometheus: %+v", nodes)
	}

	rep, code = run(healthyFrom, faultFrom.Add(-2*time.Second))
	if len(rep.Findings) != 0 || code != 0 {
		t.Fatalf("healthy window before the fault: exit %d, findings %v", code, ids(rep))
	}
	for _, e := range rep.Rules {
		if e.ID == "KS-API-409" && e.Status != result.RuleClear {
			t.Fatalf("KS-API-409 in the healthy window: %s %s", e.Status, e.Reason)
		}
	}
}

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
