package run

import (
	"context"
	"errors"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

type fakeM struct {
	name string
	kind measure.Kind
}

func (f fakeM) Name() string        { return f.name }
func (f fakeM) Description() string { return f.name }
func (f fakeM) Kind() measure.Kind  { return f.kind }
func (f fakeM) Run(context.Context, *measure.Env) (result.Result, error) {
	return result.Result{Name: f.name, Status: result.StatusPass}, nil
}

// TestSkipBenchmarks: when the run's namespace cannot be made, benchmarks become skips with the reason and
// read-only checks are untouched.
func TestSkipBenchmarks(t *testing.T) {
	ms := skipBenchmarks([]measure.Measurement{fakeM{"ro", measure.ReadOnly}, fakeM{"bench", measure.Benchmark}}, "etcd full")
	if _, err := ms[0].Run(context.Background(), nil); err != nil {
		t.Fatalf("read-only check changed: %v", err)
	}
	_, err := ms[1].Run(context.Background(), nil)
	var se *measure.SkipError
	if !errors.As(err, &se) || se.Reason != "etcd full" || ms[1].Name() != "bench" {
		t.Fatalf("benchmark not skipped: %v", err)
	}
}
