package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestWriteHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Well-formed: every element closes (the HTML tokenizer of encoding/xml in lenient mode).
	// (the scripts' text is not markup: left out of this check)
	markup := regexp.MustCompile(`(?s)(<script[^>]*>).*?(</script>)`).ReplaceAllString(page, "$1$2")
	dec := xml.NewDecoder(strings.NewReader(markup))
	dec.Strict, dec.AutoClose, dec.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	depth := 0
	var refs []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("malformed page: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			refs = append(refs, externalRefs(e)...)
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Errorf("unbalanced elements: depth %d", depth)
	}
	// Percentiles (one group, seconds), the CDF of the SLI, phases per node, the etcd series.
	if n := strings.Count(page, `<div class="chart"`); n != 4 {
		t.Errorf("%d plots, want 4", n)
	}
	for _, want := range []string{
		`href="#r-pods-startup"`, `id="r-pods-startup"`, `id="r-etcd-health"`, // findings link to their evidence
		"pod start-up: CDF per phase over 60 pods", "phases per node", "change point", "wal_fsync_p99 (seconds)",
		"lab &lt;test&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", // escaped
		`Not measured: <a href="#unmeasured">the apiserver&#39;s audit log</a>`, "could not create the probe pod", "not evaluated (their inputs were not measured",
		"Could not measure (2)",
		"<b>the apiserver&#39;s audit log</b>: a managed control plane <b>Fix:</b> EKS: enable the audit log type",
		`not measured: <a href="#r-api-audit">api.audit</a>`, "rules not evaluated: KS-AUDIT-LIST",
		"<b>could not create the probe pod</b>: forbidden", // the reason's first clause said once: the gap's title
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Three scripts, all inline: the chart library, the plots' data, the page's script.
	if n := strings.Count(page, "<script"); n != 3 || len(refs) > 0 || strings.Contains(markup, "url(") || strings.Contains(markup, "@import") {
		t.Errorf("%d scripts, external references: %v", n, refs)
	}
	// A rule that fired on several nodes is one finding; its items are listed, worst first.
	if i, j := strings.Index(page, `<td>node=kwok-node-2</td><td class="n">5.4</td>`), strings.Index(page, "<td>node=kwok-node-7</td>"); i < 0 || j < i ||
		!strings.Contains(page, "2 items, worst first") || strings.Count(page, `id="KS-POD-NODE"`) != 1 {
		t.Errorf("KS-POD-NODE's items not listed worst first: %d %d", i, j)
	}
	// Causes come first, worst first, each with its key number against its threshold and its fix.
	if i, j, k := strings.Index(page, "KS-POD-SLO"), strings.Index(page, "KS-POD-NODE"), strings.Index(page, `id="results"`); !(i < j && j < k) {
		t.Errorf("findings not first and worst first: %d %d %d", i, j, k)
	}
	if !strings.Contains(page, `<span class="v">7.1 s</span><span class="t">threshold &gt; 5 s<br>SIG Scalability</span>`) || !strings.Contains(page, "<b>Fix:</b> see the phase") {
		t.Error("KS-POD-SLO's key number, threshold or fix missing")
	}
	// The slow node's bar is the first (slowest first) of the stacked plot.
	if i, j := strings.Index(page, `"kwok-node-2 (20 pods)"`), strings.Index(page, `"kwok-node-0 (20 pods)"`); i < 0 || j < 0 || i > j {
		t.Errorf("slow node not first in the per-node plot: %d %d", i, j)
	}
}

// externalRefs are the attributes of e that make a browser fetch something: any link, source or
// reference that is not a fragment of the page itself (the SVG namespace is a name, not a fetch).
func externalRefs(e xml.StartElement) []string {
	var out []string
	for _, a := range e.Attr {
		switch a.Name.Local {
		case "href", "src", "srcset", "action", "data", "poster", "background":
			if !strings.HasPrefix(a.Value, "#") {
				out = append(out, e.Name.Local+" "+a.Name.Local+"="+a.Value)
			}
		}
	}
	return out
}

// TestExternalRefs: the external-reference check catches what it must (it is what TestWriteHTML relies on).
func TestExternalRefs(t *testing.T) {
	for page, want := range map[string]int{
		`<svg xmlns="http://www.w3.org/2000/svg"><a href="#r-x">x</a></svg>`:        0,
		`<img src="http://example.com/x.png"/>`:                                     1,
		`<link rel="stylesheet" href="https://cdn.example/a.css"/>`:                 1,
		`<svg xmlns="http://www.w3.org/2000/svg"><use xlink:href="//x/y#z"/></svg>`: 1,
	} {
		dec := xml.NewDecoder(strings.NewReader(page))
		dec.Strict = false
		n := 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if e, ok := tok.(xml.StartElement); ok {
				n += len(externalRefs(e))
			}
		}
		if n != want {
			t.Errorf("%s: %d external references, want %d", page, n, want)
		}
	}
}

func TestWriteHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	r := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "x",
		Results: []result.Result{{Name: "a", Status: result.StatusPass, Series: []result.Series{{Name: "s", Points: []result.Point{{V: 1}}}}}}}
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `<div class="chart"`) || !strings.Contains(b.String(), "Nothing measured crossed a threshold") {
		t.Errorf("empty report: %s", b.String())
	}
}

// A cause seen by a second source lists it under the cause, not as a cause of its own.
func TestWriteHTMLSeenAlso(t *testing.T) {
	rep := sampleReport()
	rep.Findings[0].SeenAlso = []result.SeenAlso{{ID: "KS-AUDIT-409", Title: "t", Summary: "812 409 Conflicts from calico-ipam", Results: []string{"api.audit"}}}
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Seen also by KS-AUDIT-409 (api.audit): 812 409 Conflicts from calico-ipam") {
		t.Fatal("the second source is not listed under its cause")
	}
}
