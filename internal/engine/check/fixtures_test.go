package check

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/apislo/apislotest"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup/dnslookuptest"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent/nodeagenttest"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup/podstartuptest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Each measurement's rules have their fixtures in its fixture package (internal/measure/<name>/<name>test,
// RuleFixtures): what the measurement's own analysis (its pure Analyze, or the pure part of its Run) makes
// of scripted or recorded inputs — apiserver and etcd metric scrapes (recorded on the lab, or written in the
// exposition format), node objects, pod timelines, DNS answers, audit events, agent readings. Rules are
// tested on those results, as a user's run would produce them, never on metrics made up to fit the rule.
// fixtures_gen_test.go lists the fixture packages (generated: go test ./internal/engine/check -update); the combined
// rules' fixtures are here.

// combinedFixtures are CombinedRules' firing and clear fixtures.
func combinedFixtures() map[string]ruletest.Fixture {
	ipam := func(resource string) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report {
			a := apislotest.Healthy
			a.Conflicts = map[string]int{resource: 3000}
			return ruletest.Report(nil, podstartuptest.SlowSandboxNode.Result(), a.Result(t))
		}
	}
	race := func(tree string, dns dnslookuptest.Shape) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report {
			return ruletest.Report(nil, nodeagenttest.WithHost("n2", tree).Result(t), dns.Result())
		}
	}
	return map[string]ruletest.Fixture{
		// insert_failed rising with 5 s lookups; and the same lookups on nodes whose conntrack shows no race (a
		// lossy path: another mechanism).
		"KS-DNS-CONNTRACK-RACE": {Fire: race("conntrack-race", dnslookuptest.NthDrop), Clear: race("healthy", dnslookuptest.NthDrop)},
		"KS-CNI-IPAM":           {Fire: ipam("ipamblocks"), Clear: ipam("configmaps")},
		"KS-CP-SATURATED": {Fire: cpSaturated(saturated, apislotest.With(func(a *apislotest.Server) { a.GetLatency = 1.8 }), nil),
			Clear: cpSaturated(saturated, apislotest.Healthy, nil)}, // busy but within the SLOs
		"KS-CP-SATURATED-API": {Fire: cpSaturated(starvedManaged, apislotest.With(func(a *apislotest.Server) { a.GetLatency, a.APFWait, a.APFQueued = 1.8, 0.9, 14 }), nil),
			Clear: cpSaturated(controlPlane{apiCores: 0.3}, apislotest.With(func(a *apislotest.Server) { a.GetLatency = 1.8 }), nil)}, // a slow API with CPU to spare
	}
}

// ruleCases are every rule's firing and clear fixtures: the fixture packages' and the combined rules'.
func ruleCases(t *testing.T) map[string]ruletest.Fixture {
	cases := combinedFixtures()
	for _, fixtures := range measurementFixtures {
		for id, c := range fixtures() {
			if _, dup := cases[id]; dup {
				t.Errorf("two fixture packages have fixtures for %s", id)
			}
			cases[id] = c
		}
	}
	return cases
}

// TestEveryRuleFiresAndClears: every rule has a fixture on which it fires and one on which it stays clear,
// both as the measurement's analysis produced them; a rule without both fails the test.
func TestEveryRuleFiresAndClears(t *testing.T) {
	cases := ruleCases(t)
	for _, r := range variants(Rules()) {
		t.Run(fixtureKey(r), func(t *testing.T) {
			c, ok := cases[fixtureKey(r)]
			if !ok {
				c, ok = cases[r.ID]
			}
			if !ok {
				t.Fatalf("rule %s has no firing and clear fixture: add one to its package's fixture package (RuleFixtures), see docs/results.md", r.ID)
			}
			if c.Fire == nil || c.Clear == nil {
				t.Fatalf("rule %s lacks a firing or a clear fixture", r.ID)
			}
			for _, want := range []result.RuleStatus{result.RuleFired, result.RuleClear} {
				rep := c.Clear(t)
				if want == result.RuleFired {
					rep = c.Fire(t)
				}
				fs, evals := rule.Evaluate(rep, []rule.Rule{r})
				if evals[0].Status != want {
					t.Fatalf("want %s, got %s %s", want, evals[0].Status, evals[0].Reason)
				}
				if want == result.RuleFired {
					f := fs[0]
					if strings.Contains(f.Summary, "{{") || strings.Contains(f.Summary, "<no value>") {
						t.Errorf("summary not filled in: %q", f.Summary)
					}
					rep.Findings = fs
					if err := rep.Validate(); err != nil {
						t.Error(err)
					}
					t.Logf("%s", f.Summary)
				}
			}
		})
	}
	for id := range cases {
		found := false
		for _, r := range variants(Rules()) {
			found = found || r.ID == id || fixtureKey(r) == id
		}
		if !found {
			t.Errorf("the fixtures have %s, which is no rule", id)
		}
	}
}

// variants are the rules, each with its Alternatives (the same ID over other sources) as rules of their own.
func variants(rules []rule.Rule) []rule.Rule {
	var out []rule.Rule
	for _, r := range rules {
		alts := r.Alternatives
		r.Alternatives = nil
		out = append(append(out, r), alts...)
	}
	return out
}

// fixtureKey is the fixture key of a rule that is one of several of its ID: "ID@result" (its first input),
// else its ID. A fixture keyed by the ID alone serves the variant that has none of its own.
func fixtureKey(r rule.Rule) string {
	for _, o := range Rules() {
		if o.ID == r.ID && len(o.Alternatives) > 0 {
			if in := r.Inputs(); len(in) > 0 {
				return r.ID + "@" + in[0]
			}
		}
	}
	return r.ID
}

// TestRulesReadProducedMetrics: every metric a rule names (its conditions' and the ones its Match reads) is
// produced by its measurement's analysis of the fixtures; a misspelt or renamed metric would leave a rule
// clear forever.
func TestRulesReadProducedMetrics(t *testing.T) {
	produced := map[rule.Metric]bool{}
	add := func(r *result.Report) {
		for _, res := range r.Results {
			for _, m := range res.Metrics {
				produced[rule.Metric{Result: res.Name, Name: m.Name}] = true
			}
		}
	}
	for _, c := range ruleCases(t) {
		add(c.Fire(t))
		add(c.Clear(t))
	}
	add(ruletest.Report(nil, apislotest.Recorded(t)))
	var missing []string
	for _, r := range variants(Rules()) {
		for _, m := range r.Metrics() {
			if !produced[m] {
				missing = append(missing, r.ID+": "+m.String())
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("rules read metrics no measurement produces:\n%s", strings.Join(missing, "\n"))
	}
}

const module = "github.com/kubeslow/kubeslow"

// fixturePackages finds the packages under internal/ and pkg/ that declare RuleFixtures: their import paths
// and names, by import path.
func fixturePackages(t *testing.T) [][2]string {
	var pkgs [][2]string
	root := filepath.Join("..", "..", "..")
	for _, top := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() || d.Name() == "testdata" {
				return err
			}
			entries, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
					continue
				}
				f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(path, e.Name()), nil, parser.SkipObjectResolution)
				if err != nil {
					return err
				}
				for _, decl := range f.Decls {
					if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "RuleFixtures" {
						rel, _ := filepath.Rel(root, path)
						pkgs = append(pkgs, [2]string{module + "/" + filepath.ToSlash(rel), f.Name.Name})
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i][0] < pkgs[j][0] })
	return pkgs
}

// TestFixturePackagesListed keeps fixtures_gen_test.go (the list TestEveryRuleFiresAndClears reads) generated
// from the packages that declare RuleFixtures, so a measurement's new fixture package is never left out.
func TestFixturePackagesListed(t *testing.T) {
	var b strings.Builder
	b.WriteString("// Code generated by go test ./internal/engine/check -update; DO NOT EDIT.\n\npackage check\n\nimport (\n")
	pkgs := fixturePackages(t)
	imports := []string{module + "/internal/rule/ruletest"}
	for _, p := range pkgs {
		imports = append(imports, p[0])
	}
	sort.Strings(imports) // as gofmt orders them
	for _, imp := range imports {
		b.WriteString("\t\"" + imp + "\"\n")
	}
	b.WriteString(")\n\n")
	b.WriteString("// measurementFixtures are the RuleFixtures of every package under internal/ and pkg/ that declares one.\n")
	b.WriteString("var measurementFixtures = []func() map[string]ruletest.Fixture{\n")
	for _, p := range pkgs {
		b.WriteString("\t" + p[1] + ".RuleFixtures,\n")
	}
	b.WriteString("}\n")
	const path = "fixtures_gen_test.go"
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != b.String() {
		t.Fatalf("%s is out of date: run go test ./internal/engine/check -update (%v)", path, err)
	}
}
