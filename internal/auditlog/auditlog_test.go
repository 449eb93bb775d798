package auditlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// jsonEvent decodes with encoding/json, the reference the scanner must agree with.
func jsonEvent(t *testing.T, line []byte) Event {
	t.Helper()
	var raw struct {
		Stage, Verb, UserAgent                   string
		User                                     struct{ Username string }
		ObjectRef                                *struct{ Resource, Subresource, APIGroup, Namespace, Name string }
		ResponseStatus                           *struct{ Code int }
		RequestReceivedTimestamp, StageTimestamp time.Time
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		t.Fatal(err)
	}
	ev := Event{Stage: raw.Stage, Verb: raw.Verb, User: raw.User.Username, UserAgent: raw.UserAgent, Received: raw.RequestReceivedTimestamp, StageTime: raw.StageTimestamp}
	if raw.ObjectRef != nil {
		ev.Resource, ev.Subresource, ev.APIGroup, ev.Namespace, ev.Name = raw.ObjectRef.Resource, raw.ObjectRef.Subresource, raw.ObjectRef.APIGroup, raw.ObjectRef.Namespace, raw.ObjectRef.Name
	}
	if raw.ResponseStatus != nil {
		ev.Code = raw.ResponseStatus.Code
	}
	return ev
}

// TestParseLineAgreesWithEncodingJSON on every line of a real lab audit log (kube-apiserver 1.36.3 during the
// conflict-storm scenario).
func TestParseLineAgreesWithEncodingJSON(t *testing.T) {
	f, err := os.Open("testdata/lab-conflict-storm.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(gz); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) < 1000 {
		t.Fatalf("only %d lines", len(lines))
	}
	for i, l := range lines {
		got, err := ParseLine(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if want := jsonEvent(t, l); got != want {
			t.Fatalf("line %d:\n got %+v\nwant %+v", i+1, got, want)
		}
	}
}

func TestParseLineRejects(t *testing.T) {
	good := string(genLog(1, false, false))
	for name, in := range map[string]string{
		"empty":     "",
		"garbage":   "hello world",
		"truncated": good[:len(good)/2],
		"trailing":  strings.TrimSpace(good) + " x",
		"not event": `{"kind":"Status","code":500}`,
		"array":     `[1,2,3]`,
		"bad time":  strings.Replace(good, `"requestReceivedTimestamp":"2026`, `"requestReceivedTimestamp":"yesterday-2026`, 1),
	} {
		if _, err := ParseLine([]byte(in)); err == nil {
			t.Errorf("%s: accepted %.80q", name, in)
		}
	}
}

func writeFile(t *testing.T, dir, name string, data []byte, gz bool, mod time.Time) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadRotatedSet reads a rotated set (gzip by magic bytes, not name), skips garbage and a truncated
// gzip tail without losing the good events, and orders files oldest first.
func TestReadRotatedSet(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	writeFile(t, dir, "audit-2026-11-22T09-00-00.000.log", genLog(100, false, false), true, now.Add(-2*time.Hour)) // gzip without .gz
	bad := append(genLog(50, false, false), []byte("garbage line\n{\"truncated\":\n")...)
	writeFile(t, dir, "audit-2026-11-22T10-00-00.000.log.gz", bad, true, now.Add(-time.Hour))
	live := writeFile(t, dir, "audit.log", genLog(30, false, true), false, now)
	full := genLog(40, false, false)
	var gzb bytes.Buffer
	w := gzip.NewWriter(&gzb)
	w.Write(full)
	w.Close()
	trunc := filepath.Join(t.TempDir(), "cut.gz")
	os.WriteFile(trunc, gzb.Bytes()[:gzb.Len()*2/3], 0o644)

	files, err := Expand([]string{dir, trunc})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 || files[2] != live || files[3] != trunc {
		t.Fatalf("files %v", files)
	}
	var order []time.Time
	st, err := Read(context.Background(), files, func(ev *Event) { order = append(order, ev.Received) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Events < 180 || st.Events >= 220 || st.BadLines < 3 || len(st.FirstBad) == 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := Read(context.Background(), []string{filepath.Join(dir, "missing")}, func(*Event) {}, nil); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestAnalyzer(t *testing.T) {
	a := NewAnalyzer()
	for _, l := range bytes.Split(bytes.TrimSpace(genLog(3000, true, true)), []byte("\n")) {
		ev, err := ParseLine(l)
		if err != nil {
			t.Fatal(err)
		}
		a.Add(&ev)
	}
	res := a.Result(5)
	share := res.Metric("list_share", map[string]string{"user_agent": "node-monitor/1.0"})
	if share == nil || share.Value != 1 || share.Labels["resource"] != "events" {
		t.Fatalf("list share %+v", share)
	}
	c := res.Metric("conflicts_per_minute", map[string]string{"user_agent": "calico-ipam/v3.27", "resource": "ipamblocks"})
	if c == nil || c.Labels["hot_object"] != "10-0-1-0-26" {
		t.Fatalf("conflicts %+v", c)
	}
	// 400 conflicts (i%5==1 and not a storm LIST) over 30 s of log.
	if c.Value < 780 || c.Value > 820 {
		t.Fatalf("conflict rate %v/min, want ~800", c.Value)
	}
	if len(res.Series) != 3 || len(res.Series[0].Points) == 0 {
		t.Fatalf("series %+v", res.Series)
	}
	// Watches count once, at ResponseStarted; RequestReceived never.
	a2 := NewAnalyzer()
	for _, ev := range []Event{{Stage: "RequestReceived", Verb: "get"}, {Stage: "ResponseStarted", Verb: "watch"}, {Stage: "ResponseComplete", Verb: "watch"}, {Stage: "ResponseComplete", Verb: "get"}} {
		a2.Add(&ev)
	}
	if a2.total != 2 {
		t.Fatalf("counted %d requests, want 2", a2.total)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, l := range bytes.Split(genLog(3, true, true), []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"verb":"get","stage":"x","user":{"username":"a\u0041"},"objectRef":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := ParseLine(line)
		if err != nil {
			return
		}
		a := NewAnalyzer()
		a.Add(&ev)
		a.Result(3)
	})
}
