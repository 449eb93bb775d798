package check

import (
	"flag"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/rule"
)

var update = flag.Bool("update", false, "regenerate docs/rules.md")

func TestRulesAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
		if r.Title == "" || r.Severity.Rank() == 0 || r.Source == "" || r.Remediation == "" || r.When.Metric.Result == "" || r.When.Metric.Name == "" ||
			r.When.Unit == "" || !validOp(r.When.Op) || r.Summary == "" {
			t.Errorf("rule %s is incomplete: %+v", r.ID, r)
		}
		for _, c := range r.Also {
			if !validOp(c.Op) || c.Unit == "" {
				t.Errorf("rule %s: condition %+v", r.ID, c)
			}
		}
		if !strings.HasPrefix(r.ID, "KS-") {
			t.Errorf("rule id %s does not start with KS-", r.ID)
		}
	}
}

// TestCausesNameRules: every cause (ExplainedBy) and every other source of a cause (SameCause) a rule names is
// a rule: a misspelt ID would leave a symptom at the top of the report with "no cause found".
func TestCausesNameRules(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range Rules() {
		ids[r.ID] = true
	}
	for _, r := range Rules() {
		for _, id := range append(append([]string(nil), r.ExplainedBy...), r.SameCause...) {
			if !ids[id] || id == r.ID {
				t.Errorf("rule %s names %s as a cause or a source, which is no other rule", r.ID, id)
			}
		}
	}
	for id := range causes {
		if !ids[id] {
			t.Errorf("causes lists %s, which is no rule", id)
		}
	}
}

func validOp(op string) bool { return op == ">" || op == ">=" || op == "<" || op == "<=" }

// TestReferenceUpToDate keeps docs/rules.md generated from the rules.
func TestReferenceUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "rules.md")
	want := rule.Reference(Rules())
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/rules.md is out of date: run go test ./internal/engine/check -update (%v)", err)
	}
}

// TestEngineDoesNotImportRenderers: the findings engine (the rule type and its evaluation, and the rule set)
// depends on the schema, never on a renderer; internal/rule is a leaf that measurement packages import.
func TestEngineDoesNotImportRenderers(t *testing.T) {
	for _, dir := range []string{".", "../../rule"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			if strings.HasSuffix(imp, "/internal/report") {
				t.Errorf("%s imports %s", dir, imp)
			}
			if dir == "../../rule" && strings.Contains(imp, "/kubeslow/") && !strings.HasSuffix(imp, "/pkg/result") {
				t.Errorf("internal/rule imports %s: it must stay a leaf that measurement packages can import", imp)
			}
		}
	}
}
