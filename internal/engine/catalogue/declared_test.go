package catalogue_test

import (
	"reflect"
	"testing"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/measure"
)

// TestDeclared: what a Spec states of its measurement (its Kind, its Permissions) is what the run reads of the
// instance New builds (measure.KindOf, measure.PermissionsOf), so it is declared once, in the Spec. pods.startup
// with Options.PodsWatch is the one measurement that is another one by its options: the passive instance
// declares a read-only Spec of its own, with fewer permissions than the benchmark's (which `kubeslow rbac`
// grants).
func TestDeclared(t *testing.T) {
	for _, s := range catalogue.Specs() {
		m := s.New(measure.Options{}.Defaults())
		d, ok := measure.SpecOf(m)
		if !ok {
			t.Errorf("%s: %T does not implement measure.Declared", s.Name, m)
			continue
		}
		if d.Name != s.Name || d.Bench != s.Bench || d.Kind != s.Kind || !reflect.DeepEqual(d.Permissions, s.Permissions) {
			t.Errorf("%s: %T declares %s (bench %v, kind %v), not the Spec that built it", s.Name, m, d.Name, d.Bench, d.Kind)
		}
		if measure.KindOf(m) != s.Kind || !reflect.DeepEqual(measure.PermissionsOf(m), s.Permissions) {
			t.Errorf("%s: KindOf and PermissionsOf do not read its Spec", s.Name)
		}
	}

	ms, err := catalogue.Registry(catalogue.Options{PodsWatch: &measure.PodsWatch{}}).Select([]string{"pods.startup"}, nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("pods.startup: %v %v", ms, err)
	}
	if k := measure.KindOf(ms[0]); k != measure.ReadOnly {
		t.Errorf("passive pods.startup is of kind %v, want read-only", k)
	}
	for _, p := range measure.PermissionsOf(ms[0]) {
		for _, v := range p.Verbs {
			if v != "list" && v != "watch" {
				t.Errorf("passive pods.startup asks %s: it only reads", p)
			}
		}
	}
	if len(measure.PermissionsOf(ms[0])) == 0 {
		t.Error("passive pods.startup declares no permission: it reads pods and events")
	}
}
