package promrules_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/promrules"
	"github.com/kubeslow/kubeslow/internal/rule"
)

func build(t *testing.T) promrules.Output {
	t.Helper()
	return promrules.Build(check.Rules(), promrules.Options{For: 5 * time.Minute})
}

func render(t *testing.T, out promrules.Output, format string) []byte {
	t.Helper()
	b, err := promrules.Render(out, format, promrules.RenderOptions{Name: "kubeslow", Namespace: "monitoring", Generator: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPrometheusFormat(t *testing.T) {
	out := build(t)
	b := render(t, out, "prometheus")
	var f promrules.RuleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("output is not a rule file: %v\n%s", err, b)
	}
	if len(f.Groups) != 2 || f.Groups[0].Name != promrules.GroupRules || f.Groups[1].Name != promrules.GroupSLO {
		t.Fatalf("groups = %+v", f.Groups)
	}
	alerts := map[string]promrules.Rule{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				if !strings.HasPrefix(r.Record, "kubeslow:") || r.Expr == "" {
					t.Errorf("recording rule %+v", r)
				}
				continue
			}
			for _, l := range []string{"id", "severity"} {
				if r.Labels[l] == "" {
					t.Errorf("%s: no %s label", r.Alert, l)
				}
			}
			for _, a := range []string{"summary", "description", "threshold", "threshold_source", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			if r.For == "" {
				t.Errorf("%s: no for", r.Alert)
			}
			if g.Name == promrules.GroupRules {
				alerts[r.Labels["id"]] = r
			}
		}
	}
	lat, ok := alerts["KS-API-LATENCY"]
	if !ok {
		t.Fatalf("KS-API-LATENCY not exported; exported %v", out.Exported)
	}
	if lat.Alert != "KS_API_LATENCY" || lat.For != "5m" || lat.Labels["severity"] != "error" || lat.Labels["case"] != "B,E" ||
		!strings.HasSuffix(lat.Expr, ") > 1") || !strings.Contains(lat.Expr, "apiserver_request_sli_duration_seconds_bucket") ||
		!strings.HasSuffix(lat.Annotations["runbook_url"], "docs/rules.md#ks-api-latency--api-calls-slower-than-the-slo") ||
		!strings.Contains(lat.Annotations["threshold_source"], "SIG Scalability") {
		t.Errorf("KS-API-LATENCY = %+v", lat)
	}
	if q := alerts["KS-ETCD-QUOTA"].Expr; !strings.HasSuffix(q, ">= 0.8") {
		t.Errorf("KS-ETCD-QUOTA expr %q does not keep the rule's operator and value", q)
	}
	// Every rule is exported or skipped with a reason, and the skipped ones are in the header.
	rules := check.Rules()
	skipped := map[string]string{}
	for _, s := range out.Skipped {
		skipped[s.ID] = s.Reason
		if !strings.Contains(string(b), "#   "+s.ID+": ") {
			t.Errorf("%s skipped but not listed in the header", s.ID)
		}
	}
	for _, r := range rules {
		_, exp := alerts[r.ID]
		if exp == (skipped[r.ID] != "") {
			t.Errorf("%s: exported %v, skipped %q", r.ID, exp, skipped[r.ID])
		}
	}
	for _, id := range []string{"KS-POD-SLO", "KS-ETCD-NOSPACE", "KS-AUDIT-409", "KS-CNI-IPAM"} {
		if skipped[id] == "" {
			t.Errorf("%s exported: Prometheus does not hold its inputs", id)
		}
	}
}

func TestBurnRateAlerts(t *testing.T) {
	out := build(t)
	var slo promrules.Group
	for _, g := range out.File.Groups {
		if g.Name == promrules.GroupSLO {
			slo = g
		}
	}
	want := map[string][]string{
		"KS_SLO_POD_STARTUP_BURN": {"1h/5m/14.4/critical", "6h/30m/6/critical", "3d/6h/1/warning"},
		"KS_SLO_API_LATENCY_BURN": {"1h/5m/14.4/critical", "6h/30m/6/critical", "3d/6h/1/warning"},
	}
	got := map[string][]string{}
	for _, r := range slo.Rules {
		if r.Alert != "" {
			got[r.Alert] = append(got[r.Alert], strings.Join([]string{r.Labels["long"], r.Labels["short"], r.Labels["burn"], r.Labels["severity"]}, "/"))
			if !strings.Contains(r.Expr, "error_ratio_rate"+r.Labels["long"]+" > ("+r.Labels["burn"]+" * 0.01)") {
				t.Errorf("%s %s: expr %q", r.Alert, r.Labels["long"], r.Expr)
			}
		}
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s windows = %v, want %v", k, got[k], w)
		}
	}
	pod := promrules.SLOs(check.Rules())[1]
	if q := pod.ErrorRatio("1h"); !strings.Contains(q, `kubelet_pod_start_sli_duration_seconds_bucket{le=~"5(\\.0)?"}[1h]`) {
		t.Errorf("pod start-up error ratio %q: not the 5 s bucket", q)
	}
	api := promrules.SLOs(check.Rules())[0]
	if api.LE != 1 {
		t.Errorf("API SLO threshold %v s, want KS-API-LATENCY's 1 s", api.LE)
	}
}

func TestOperatorFormat(t *testing.T) {
	out := build(t)
	var pr promrules.PrometheusRule
	if err := yaml.UnmarshalStrict(render(t, out, "prometheus-operator"), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Namespace != "monitoring" || pr.Metadata.Name != "kubeslow" {
		t.Errorf("object = %+v", pr.Metadata)
	}
	if len(pr.Spec.Groups) != len(out.File.Groups) || len(pr.Spec.Groups[0].Rules) != len(out.File.Groups[0].Rules) {
		t.Errorf("spec has %d groups, want the rule file's %d", len(pr.Spec.Groups), len(out.File.Groups))
	}
}

func TestInhibitRules(t *testing.T) {
	out := build(t)
	var c promrules.InhibitConfig
	if err := yaml.UnmarshalStrict(render(t, out, "alertmanager-inhibit"), &c); err != nil {
		t.Fatal(err)
	}
	byTarget := map[string]string{}
	for _, in := range c.InhibitRules {
		if len(in.TargetMatchers) != 1 || len(in.SourceMatchers) != 1 {
			t.Fatalf("inhibit rule %+v", in)
		}
		byTarget[in.TargetMatchers[0]] = in.SourceMatchers[0]
	}
	if s := byTarget[`id="KS-API-LATENCY"`]; s != `id=~"KS-ETCD-COMMIT|KS-ETCD-FSYNC"` {
		t.Errorf("KS-API-LATENCY inhibited by %q, want its exported causes", s)
	}
	if s := byTarget[`id="KS-SLO-POD-STARTUP"`]; !strings.Contains(s, "KS-API-LATENCY") {
		t.Errorf("pod start-up burn inhibited by %q, want KS-POD-SLO's exported causes", s)
	}
	// Only exported causes: an inhibit by an alert that never fires is noise.
	for _, src := range byTarget {
		for _, id := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(src, `id=~"`), `"`), "|") {
			if !slices.Contains(out.Exported, id) {
				t.Errorf("source %s is not exported", id)
			}
		}
	}
}

// A condition pair over different items is not joined, and a metric without expression is skipped.
func TestBuildWithSkips(t *testing.T) {
	a, b := rule.Metric{Result: "x", Name: "a"}, rule.Metric{Result: "x", Name: "b"}
	rules := []rule.Rule{
		{ID: "KS-A", Title: "A", Severity: "warning", When: rule.Condition{Metric: a, Op: ">", Value: 2}},
		{ID: "KS-AB", Title: "AB", Severity: "warning", When: rule.Condition{Metric: a, Op: ">", Value: 2}, Also: []rule.Condition{{Metric: b, Op: "<", Value: 1}}},
		{ID: "KS-C", Title: "C", Severity: "warning", When: rule.Condition{Metric: rule.Metric{Result: "y", Name: "c"}, Op: ">", Value: 2}, ExplainedBy: []string{"KS-A"}},
	}
	out := promrules.BuildWith(rules, map[rule.Metric]promrules.Expr{a: {Query: "foo", By: []string{"instance"}}, b: {Query: "bar", By: []string{"node"}}}, promrules.Options{})
	if !slices.Equal(out.Exported[:1], []string{"KS-A"}) || len(out.Skipped) != 2 {
		t.Fatalf("exported %v skipped %+v", out.Exported, out.Skipped)
	}
	if r := out.File.Groups[0].Rules[0]; r.Expr != "(foo) > 2" || r.For != "5m" {
		t.Errorf("rule %+v", r)
	}
	if !strings.Contains(out.Skipped[0].Reason, "different items") || !strings.Contains(out.Skipped[1].Reason, "does not read y") {
		t.Errorf("reasons %+v", out.Skipped)
	}
}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (Debian: apt-get install prometheus): the rules' PromQL is not checked")
	}
	return p
}

// Every expression parses and every rule is valid, as Prometheus loads them.
func TestPromtoolCheckRules(t *testing.T) {
	p := promtool(t)
	file := filepath.Join(t.TempDir(), "kubeslow.rules.yaml")
	if err := os.WriteFile(file, render(t, build(t), "prometheus"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(p, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, b)
	}
}

// testdata/alerts.test.yaml feeds synthetic series to the generated rules: one alert fires, others stay silent.
func TestPromtoolTestRules(t *testing.T) {
	p := promtool(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubeslow.rules.yaml"), render(t, build(t), "prometheus"), 0o644); err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod promrules.Rule
	for _, r := range build(t).File.Groups[1].Rules {
		if r.Alert == "KS_SLO_POD_STARTUP_BURN" && r.Labels["long"] == "1h" {
			pod = r
		}
	}
	for _, a := range []string{"threshold_source", "remediation", "runbook_url"} {
		q, _ := json.Marshal(pod.Annotations[a])
		test = bytes.ReplaceAll(test, []byte("@pod_"+a+"@"), q)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), test, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p, "test", "rules", "alerts.test.yaml")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, b)
	}
}

// TestRateWindow: Options.Rate sets the rate window of every rule alert's expression (the default 5m stays
// where it is not set); the SLO group keeps its own windows.
func TestRateWindow(t *testing.T) {
	def := build(t)
	short := promrules.Build(check.Rules(), promrules.Options{For: 5 * time.Minute, Rate: time.Minute})
	rateOf := regexp.MustCompile(`\[(\d+[smh])\]`)
	for _, c := range []struct {
		out  promrules.Output
		want string
	}{{def, "5m"}, {short, "1m"}} {
		n := 0
		for _, r := range c.out.File.Groups[0].Rules {
			for _, m := range rateOf.FindAllStringSubmatch(r.Expr, -1) {
				if m[1] != c.want && m[1] != "15m" { // leader changes: an increase over 15m, not a rate window
					t.Errorf("%s: window [%s] in %s, want [%s]", r.Alert, m[1], r.Expr, c.want)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatalf("no rate window in the rule alerts (%s)", c.want)
		}
	}
	if !slices.Equal(slo(def), slo(short)) {
		t.Error("the rate window changed the SLO group")
	}
}

func slo(o promrules.Output) []string {
	var out []string
	for _, r := range o.File.Groups[1].Rules {
		out = append(out, r.Expr)
	}
	return out
}
