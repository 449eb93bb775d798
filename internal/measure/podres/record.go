package podres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/kubelet"
	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// Filter keeps the lines of a Prometheus text exposition that belong to families (their samples and their
// HELP and TYPE lines): what a recording keeps of a cAdvisor scrape (kubelet.Filter).
func Filter(text []byte, families []string) []byte { return kubelet.Filter(text, families) }

// A recording (testdata/NAME/): cadvisor-NODE-first.txt and cadvisor-NODE-last.txt (Filter'ed scrapes),
// pods-start.json, pods-end.json, events.json and nodes.json (API lists' items) and window.json.
type window struct {
	From  time.Time            `json:"from"`
	To    time.Time            `json:"to"`
	First map[string]time.Time `json:"first"`
	Last  map[string]time.Time `json:"last"`
}

// Recording is what a recording holds: the cAdvisor texts besides the Input's other parts.
type Recording struct {
	Input
	FirstText, LastText map[string][]byte
}

// Save writes the recording to dir.
func (rec Recording) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w := window{From: rec.From, To: rec.To, First: map[string]time.Time{}, Last: map[string]time.Time{}}
	for which, texts := range map[string]map[string][]byte{"first": rec.FirstText, "last": rec.LastText} {
		for n, b := range texts {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("cadvisor-%s-%s.txt", n, which)), b, 0o644); err != nil {
				return err
			}
		}
	}
	for n, s := range rec.First {
		w.First[n] = s.At
	}
	for n, s := range rec.Last {
		w.Last[n] = s.At
	}
	for name, v := range map[string]any{"pods-start.json": rec.PodsStart, "pods-end.json": rec.PodsEnd, "events.json": rec.Events, "nodes.json": rec.Nodes, "window.json": w} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Load reads a recording's Input from dir.
func Load(dir string) (Input, error) {
	var in Input
	var w window
	for name, v := range map[string]any{"pods-start.json": &in.PodsStart, "pods-end.json": &in.PodsEnd, "events.json": &in.Events, "nodes.json": &in.Nodes, "window.json": &w} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return in, err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return in, fmt.Errorf("%s: %w", name, err)
		}
	}
	in.From, in.To = w.From, w.To
	in.First, in.Last = map[string]*prom.Snapshot{}, map[string]*prom.Snapshot{}
	for which, at := range map[string]map[string]time.Time{"first": w.First, "last": w.Last} {
		nodes := make([]string, 0, len(at))
		for n := range at {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		for _, n := range nodes {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("cadvisor-%s-%s.txt", n, which)))
			if err != nil {
				return in, err
			}
			s, err := prom.Parse(bytes.NewReader(b), at[n])
			if err != nil {
				return in, fmt.Errorf("cadvisor of %s (%s): %w", n, which, err)
			}
			if which == "first" {
				in.First[n] = s
			} else {
				in.Last[n] = s
			}
		}
	}
	return in, nil
}
