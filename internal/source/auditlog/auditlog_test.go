package auditlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
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
	// Read's parser interns strings and reuses one Event: it must give the same events.
	p := parser{intern: map[string]string{}}
	var reused Event
	for i, l := range lines {
		got, err := ParseLine(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		want := jsonEvent(t, l)
		if got != want {
			t.Fatalf("line %d:\n got %+v\nwant %+v", i+1, got, want)
		}
		if err := p.parse(l, &reused); err != nil || reused != want {
			t.Fatalf("line %d, interning parser: %v\n got %+v\nwant %+v", i+1, err, reused, want)
		}
	}
}

// labLines are the first n lines of the lab audit log.
func labLines(tb testing.TB, n int) [][]byte {
	tb.Helper()
	f, err := os.Open("testdata/lab-conflict-storm.log.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(gz); err != nil {
		tb.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	return lines[:min(n, len(lines))]
}

// TestParseLineEscapesAndNulls: escaped strings are decoded as encoding/json decodes them (\/ and surrogate
// pairs included), nulls leave a field empty, and whitespace between tokens is allowed.
func TestParseLineEscapesAndNulls(t *testing.T) {
	for _, l := range []string{
		`{"verb":"get","stage":"ResponseComplete","user":{"username":"a\u0041\/b\\c\"d"},"userAgent":"x\ud83d\ude00 y","objectRef":{"resource":"pods","name":"n\tm"}}`,
		`{"verb":"get","stage":"ResponseComplete","user":null,"userAgent":null,"objectRef":null,"responseStatus":null,"requestReceivedTimestamp":null}`,
		` { "verb" : "list" , "stage" : "ResponseComplete" , "responseStatus" : { "code" : 429 } , "requestReceivedTimestamp" : "2026-11-22T10:00:00+01:00" } `,
		`{"verb":"get","stage":"ResponseComplete","requestReceivedTimestamp":"2026-11-22T10:00:00.1234567891Z","stageTimestamp":"2024-02-29T23:59:59.5Z"}`,
	} {
		got, err := ParseLine([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if want := jsonEvent(t, []byte(l)); got != want {
			t.Fatalf("%s:\n got %+v\nwant %+v", l, got, want)
		}
	}
}

// TestParseRFC3339UTC: the fast timestamp path agrees with time.Parse on what it accepts, and leaves the
// rest to it.
func TestParseRFC3339UTC(t *testing.T) {
	for _, in := range []string{
		"2026-11-22T10:00:00Z", "2026-11-22T10:00:00.1Z", "2026-11-22T10:00:00.123456789Z", "2026-11-22T10:00:00.000001Z",
		"2024-02-29T00:00:00Z", "2000-02-29T12:00:00Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z", "0000-03-01T00:00:00Z",
		// Not the fast path's: time.Parse decides.
		"2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:60:00Z", "2026-11-22T10:00:60Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00.1234567891Z",
		"2026-11-22t10:00:00z", "2026-11-22T10:00:00+01:00", "2026-11-22 10:00:00Z", "2026-1a-22T10:00:00Z", "2026-11-22T10:00:00", "",
	} {
		want, werr := time.Parse(time.RFC3339Nano, in)
		got, ok := parseRFC3339UTC([]byte(in))
		if ok && (werr != nil || !got.Equal(want) || got != want) {
			t.Errorf("%q: fast path %v, time.Parse %v (%v)", in, got, want, werr)
		}
		var viaScanner time.Time
		s := scanner{b: []byte(`"` + in + `"`)}
		serr := s.time(&viaScanner)
		if (serr != nil) != (werr != nil) || (werr == nil && viaScanner != want) {
			t.Errorf("%q: scanner %v (%v), time.Parse %v (%v)", in, viaScanner, serr, want, werr)
		}
	}
}

func FuzzParseRFC3339UTC(f *testing.F) {
	for _, s := range []string{"2026-11-22T10:00:00.123456Z", "2024-02-29T23:59:59Z", "2026-11-22T10:00:00+01:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := parseRFC3339UTC([]byte(in))
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, in)
		if err != nil || got != want {
			t.Fatalf("%q: fast path %v, time.Parse %v (%v)", in, got, want, err)
		}
	})
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
		_, err := ParseLine([]byte(in))
		if err == nil {
			t.Errorf("%s: accepted %.80q", name, in)
			continue
		}
		// A syntax error says where.
		if errors.Is(err, errSyntax) && !strings.Contains(err.Error(), "malformed JSON at byte ") {
			t.Errorf("%s: error %q does not say where", name, err)
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

// FuzzParseLine: no input makes the parser panic; the interning parser, reused after another line, agrees
// with ParseLine; an accepted event goes through the analysis. Seeded with real lab lines (testdata) and
// synthetic ones.
func FuzzParseLine(f *testing.F) {
	for _, l := range bytes.Split(genLog(3, true, true), []byte("\n")) {
		f.Add(l)
	}
	for _, l := range labLines(f, 20) {
		f.Add(l)
	}
	f.Add([]byte(`{"verb":"get","stage":"x","user":{"username":"a\u0041"},"objectRef":null}`))
	prev := labLines(f, 1)[0]
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := ParseLine(line)
		p := parser{intern: map[string]string{}}
		var reused Event
		if perr := p.parse(prev, &reused); perr != nil {
			t.Fatal(perr)
		}
		rerr := p.parse(line, &reused)
		if (err == nil) != (rerr == nil) || (err == nil && ev != reused) {
			t.Fatalf("ParseLine %+v (%v), interning parser %+v (%v)", ev, err, reused, rerr)
		}
		if err != nil {
			return
		}
		a := NewAnalyzer()
		a.Add(&ev)
		a.Result(3)
	})
}

// TestReadBlocksMatchSequential: the parallel read (blocks of whole lines across workers) gives the events,
// counts and first bad lines of a line-by-line read, in file order, with one worker or several, plain or
// gzip, with a line longer than a block and a last line without its newline.
func TestReadBlocksMatchSequential(t *testing.T) {
	var data []byte
	chunk := genLog(3000, true, true)
	for i := 0; len(data) < 3*blockSize; i++ {
		data = append(data, chunk...)
		switch i {
		case 0:
			data = append(data, "garbage\n\n   \n{\"verb\":\"get\"}\n"...)
		case 1:
			// One line longer than a block.
			long := bytes.Replace(genLog(1, false, false), []byte(`"annotations":{`), []byte(`"annotations":{"x":"`+strings.Repeat("y", 2*blockSize)+`",`), 1)
			data = append(data, long...)
		}
	}
	data = append(data, bytes.TrimSpace(genLog(1, false, true))...) // no final newline
	// The reference: line by line.
	var want []Event
	var wantBad []int
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		ev, err := ParseLine(bytes.TrimSpace(l))
		if err != nil {
			wantBad = append(wantBad, i+1)
			continue
		}
		want = append(want, ev)
	}
	if len(wantBad) != 2 || len(want) < 6000 {
		t.Fatalf("fixture: %d events, bad lines %v", len(want), wantBad)
	}
	dir := t.TempDir()
	plain := writeFile(t, dir, "audit.log", data, false, time.Now())
	gz := writeFile(t, dir, "audit.log.gz", data, true, time.Now())
	for _, procs := range []int{1, 2, 4} {
		for _, path := range []string{plain, gz} {
			prev := runtime.GOMAXPROCS(procs)
			var got []Event
			st, err := Read(context.Background(), []string{path}, func(ev *Event) { got = append(got, *ev) }, nil)
			runtime.GOMAXPROCS(prev)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || st.Events != int64(len(want)) || st.Lines != int64(len(lines)) || st.BadLines != 2 || len(st.FirstBad) != 2 {
				t.Fatalf("procs %d %s: %d events (want %d), stats %+v", procs, path, len(got), len(want), st)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("procs %d %s: event %d\n got %+v\nwant %+v", procs, path, i, got[i], want[i])
				}
			}
			for i, b := range st.FirstBad {
				if b.Line != wantBad[i] || b.File != path {
					t.Fatalf("procs %d: bad line %+v, want line %d", procs, b, wantBad[i])
				}
			}
		}
	}
	// A cancelled read stops with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, []string{plain}, func(*Event) {}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
}

// FuzzStringEsc: the eight-bytes-at-a-time string scanner ends a string where a byte-by-byte one does.
func FuzzStringEsc(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"x`, `"0123456789abcdef\\"`, `"01234567\\\"89"`, `"unterminated`, `"\`, `"abcdefg\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Reference.
		want, wantEsc, wantOK := -1, false, false
		if len(in) > 0 && in[0] == '"' {
			for j := 1; j < len(in); j++ {
				if in[j] == '\\' {
					wantEsc = true
					j++
					continue
				}
				if in[j] == '"' {
					want, wantOK = j, true
					break
				}
			}
		}
		s := scanner{b: in}
		raw, esc, err := s.stringEsc()
		if (err == nil) != wantOK || (wantOK && (len(raw) != want-1 || s.i != want+1 || esc != wantEsc)) {
			t.Fatalf("%q: got %q esc %v at %d (%v), want end %d esc %v ok %v", in, raw, esc, s.i, err, want, wantEsc, wantOK)
		}
	})
}
