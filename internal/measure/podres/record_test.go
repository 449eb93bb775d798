package podres_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
)

// TestLoadErrors: a recording with a file missing or a scrape that does not parse is an error naming it.
func TestLoadErrors(t *testing.T) {
	src := ruletest.Path("internal/measure/podres/testdata/recorded-healthy")
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := podres.Load(dir); err != nil {
		t.Fatalf("a copy of the recording: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cadvisor-lab-node-1-last.txt"), []byte("container_cpu_usage_seconds_total{ 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := podres.Load(dir); err == nil || !strings.Contains(err.Error(), "lab-node-1 (last)") {
		t.Errorf("a broken scrape: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "events.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := podres.Load(dir); err == nil || !strings.Contains(err.Error(), "events.json") {
		t.Errorf("no events.json: %v", err)
	}
}

// FuzzFilter: the filter keeps only whole lines of the input, each of one of the families.
func FuzzFilter(f *testing.F) {
	f.Add([]byte("# HELP container_memory_max_usage_bytes x\n# TYPE container_memory_max_usage_bytes gauge\ncontainer_memory_max_usage_bytes{pod=\"a\"} 1\nother 2\n"))
	f.Add([]byte("container_spec_cpu_quota 1\ncontainer_spec_cpu_quota_x 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := podres.Filter(b, podres.Families)
		in := map[string]bool{}
		for _, l := range bytes.Split(b, []byte("\n")) {
			in[string(l)], in[string(bytes.TrimSuffix(l, []byte("\r")))] = true, true // the scanner drops a line's \r
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			if len(out) > 0 && !in[string(l)] {
				t.Fatalf("line %q not in the input", l)
			}
			if len(l) > 0 && !bytes.HasPrefix(l, []byte("container_")) && !bytes.HasPrefix(l, []byte("# ")) {
				t.Fatalf("line %q kept", l)
			}
		}
	})
}
