package reportcmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func writeRun(t *testing.T, dir, name string, p99 float64) string {
	t.Helper()
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	r := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: name, Start: t0, End: t0.Add(time.Minute),
		Results: []result.Result{{Name: "pods.startup", Status: result.StatusPass, Metrics: []result.Metric{
			{Name: "phase_p50", Unit: "seconds", Value: p99 / 4, Labels: map[string]string{"phase": "sandbox"}},
			{Name: "phase_p99", Unit: "seconds", Value: p99, Labels: map[string]string{"phase": "sandbox"}}}}}}
	path := filepath.Join(dir, name+".json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := result.Encode(f, r); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiffHTML: `diff -o html` writes one page with the changes and the plot of both runs; a regression
// still exits 1.
func TestDiffHTML(t *testing.T) {
	dir := t.TempDir()
	a, b := writeRun(t, dir, "before", 1), writeRun(t, dir, "after", 3)
	var out, errOut bytes.Buffer
	cmd := NewDiff(common.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"-o", "html", a, b})
	err := cmd.Execute()
	var ee *common.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("exit: %v, want a regression (1)", err)
	}
	page := out.String()
	for _, want := range []string{"<!DOCTYPE html>", "kubeslow diff", "2 regressions", `<div class="chart" id="chart-0">`, `"p99 (before)"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	cmd = NewDiff(common.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"-o", "pdf", a, b})
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), "text, json or html") {
		t.Errorf("-o pdf: %v", err)
	}
}
