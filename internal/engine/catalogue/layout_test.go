package catalogue_test

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/measure"
)

const module = "github.com/kubeslow/kubeslow/"

// specPackage is the import path of the package that declares s: the package of its constructor's function
// (a closure in spec.go is named after its package, e.g. ".../internal/bench/churn.init.func1").
func specPackage(t *testing.T, s measure.Spec) string {
	t.Helper()
	if s.New == nil {
		t.Fatalf("%s: a Spec without New", s.Name)
	}
	name := runtime.FuncForPC(reflect.ValueOf(s.New).Pointer()).Name()
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".")
	if slash < 0 || dot < 0 {
		t.Fatalf("%s: cannot tell the package of its constructor %q", s.Name, name)
	}
	return name[:slash+1+dot]
}

// TestBenchLayout keeps the tree's folders of measurements apart: a package under internal/bench declares
// only benches (Spec.Bench: only `kubeslow bench` runs them), and a package under internal/measure declares at
// least one measurement of `kubeslow run` (one whose Specs are all benches belongs under internal/bench). The
// one measurement above internal/measure is the passive explanation (internal/explain/passive), which runs
// explain's reading of a pod and so stands on internal/explain's floor.
func TestBenchLayout(t *testing.T) {
	type pkg struct{ run, bench []string }
	pkgs := map[string]*pkg{}
	for _, s := range catalogue.Specs() {
		p := specPackage(t, s)
		if pkgs[p] == nil {
			pkgs[p] = &pkg{}
		}
		if s.Bench {
			pkgs[p].bench = append(pkgs[p].bench, s.Name)
		} else {
			pkgs[p].run = append(pkgs[p].run, s.Name)
		}
	}
	var nbench, nmeasure int
	for p, k := range pkgs {
		switch {
		case strings.HasPrefix(p, module+"internal/bench/"):
			nbench++
			if len(k.run) > 0 {
				t.Errorf("%s declares %v, which `kubeslow run` runs: its package belongs under internal/measure", p, k.run)
			}
		case p == module+"internal/explain/passive":
			if len(k.bench) > 0 {
				t.Errorf("%s declares benches %v: only the passive explanation lives under internal/explain", p, k.bench)
			}
		case strings.HasPrefix(p, module+"internal/measure/"):
			nmeasure++
			if len(k.run) == 0 {
				t.Errorf("%s declares only benches (%v): its package belongs under internal/bench", p, k.bench)
			}
		default:
			t.Errorf("%s declares %v %v: a measurement's package is under internal/measure or internal/bench", p, k.run, k.bench)
		}
	}
	if nbench == 0 || nmeasure == 0 {
		t.Fatalf("found %d packages under internal/bench and %d under internal/measure: the Specs' packages were not read", nbench, nmeasure)
	}
}
