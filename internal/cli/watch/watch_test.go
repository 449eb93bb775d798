package watch

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/measure"
)

// TestReadOnlySelection: a cycle runs only read-only measurements, so nothing is created in the cluster.
func TestReadOnlySelection(t *testing.T) {
	f := &flags{}
	ms, err := f.readOnly(catalogue.Options{Window: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if measure.KindOf(m) == measure.Benchmark {
			t.Errorf("%s is a benchmark: watch must create nothing", m.Name())
		}
	}
	if _, err := (&flags{only: []string{"pods.startup"}}).readOnly(catalogue.Options{}); err == nil {
		t.Error("a selection without read-only measurements must be refused")
	}
}

func TestValidate(t *testing.T) {
	ok := flags{interval: 5 * time.Minute, hold: 2, window: 20 * time.Second, maxSeries: 10}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*flags){
		"short interval":   func(f *flags) { f.interval = time.Second },
		"for 0":            func(f *flags) { f.hold = 0 },
		"window>=interval": func(f *flags) { f.window = f.interval },
		"no series":        func(f *flags) { f.maxSeries = 0 },
	} {
		f := ok
		mod(&f)
		if f.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
