package measure_test

import (
	"strings"
	"testing"
)

// layers are docs/architecture.md's lines ("Layers: which folder imports which"): a package may import, of
// kubeslow's own, only packages of its own folder or of a folder on a lower line.
var layers = map[string]int{
	"cmd": 11, "internal/app": 10, "internal/cli": 9,
	"internal/watch":  8,
	"internal/engine": 7,
	"internal/bench":  6, "internal/explain": 6, "internal/promrules": 6,
	"internal/measure": 5,
	"internal/load":    4, "internal/lab": 4,
	"internal/source": 3,
	"internal/rule":   2, "internal/report": 2,
	"pkg/result": 1, "internal/stats": 1, "internal/version": 1,
}

// folderOf is the layer folder a package path (without the module) belongs to, "" for none (hack/).
func folderOf(pkg string) string {
	best := ""
	for f := range layers {
		if (pkg == f || strings.HasPrefix(pkg, f+"/")) && len(f) > len(best) {
			best = f
		}
	}
	return best
}

// TestLayers: the imports of the code that ships (`go list` without -test) run down docs/architecture.md's
// lines, so the structure follows the data's flow; a package new to the tree must sit in a folder of the table.
func TestLayers(t *testing.T) {
	lines := goList(t, `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	checked := 0
	for _, l := range lines {
		f := strings.Fields(l)
		pkg := strings.TrimPrefix(f[0], module)
		if strings.HasPrefix(pkg, "hack/") {
			continue
		}
		from := folderOf(pkg)
		if from == "" {
			t.Errorf("%s is in no folder of docs/architecture.md's layers: add it to the table (and to this test's)", pkg)
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := folderOf(strings.TrimPrefix(imp, module))
			if to == "" || to == from {
				continue
			}
			if layers[to] >= layers[from] {
				t.Errorf("%s (line %d, %s) imports %s (line %d, %s): imports run down the lines only; move the shared code below both or hand it in from the caller",
					pkg, layers[from], from, strings.TrimPrefix(imp, module), layers[to], to)
			}
		}
	}
	if checked < 60 {
		t.Fatalf("checked %d packages, want the whole tree", checked)
	}
}

// TestSourcesKnowNoRules: a source reads signals and knows nothing of rules or thresholds (docs/architecture.md,
// "Where a new thing goes"); the rules over what it reads are the measurement's that evaluates them (the audit
// log's are measure/apiaudit's). So no package under internal/source imports the rule engine (internal/rule);
// a fixture helper may take ruletest's clock and paths.
func TestSourcesKnowNoRules(t *testing.T) {
	lines := goList(t, `{{.ImportPath}} {{join .Imports " "}}`, "./internal/source/...")
	if len(lines) < 10 {
		t.Fatalf("go list found %d packages under internal/source, want them all", len(lines))
	}
	for _, l := range lines {
		f := strings.Fields(l)
		for _, imp := range f[1:] {
			if imp == module+"internal/rule" {
				t.Errorf("%s imports internal/rule: a source knows no rules; move them to the measurement that evaluates them",
					strings.TrimPrefix(f[0], module))
			}
		}
	}
}
