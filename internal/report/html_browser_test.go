package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// chromium runs Debian's chromium headless in a network namespace of its own with only loopback (the page
// cannot fetch anything), with a new empty profile.
type chromium struct {
	t       *testing.T
	browser string
	dir     string
	n       int
}

func newChromium(t *testing.T) *chromium {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (hack/deps.sh installs it): %v", err)
	}
	return &chromium{t: t, browser: browser, dir: t.TempDir()}
}

func (c *chromium) run(args ...string) (string, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.n++
	base := []string{"-n", c.browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(c.dir, fmt.Sprintf("profile-%d", c.n)), "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, "unshare", append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

var (
	chartDivRe = regexp.MustCompile(`<div class="chart" id="(chart-\d+)"([^>]*)>`)
	drawnRe    = regexp.MustCompile(`data-drawn="([0-9 ]*)"`)
	bodyAttrRe = func(name string) *regexp.Regexp { return regexp.MustCompile(`<body[^>]* data-` + name + `="([^"]*)"`) }
)

// checkPage opens page in the browser at 1280x800 and checks what the page's script reports in the DOM: no
// console message and no error, every chart drawn with a non-empty series for each of its series, and the
// first cause (when the report has one) ending on the first screen.
func checkPage(t *testing.T, c *chromium, page string, wantCharts int, hasCause bool) string {
	t.Helper()
	dom, logs := c.run("--window-size=1280,800", "--dump-dom", "file://"+page)
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "source: chrome://") {
			continue // the browser's own pages (its new-tab page's "slow network" notice), not the report
		}
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "net::ERR") {
			t.Errorf("%s: browser reported: %s", filepath.Base(page), l)
		}
	}
	attr := func(name string) string {
		m := bodyAttrRe(name).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("%s: the page's script did not run to its end (no data-%s on the body)", filepath.Base(page), name)
		}
		return m[1]
	}
	if e := attr("errors"); e != "0" {
		t.Errorf("%s: %s script errors", filepath.Base(page), e)
	}
	divs := chartDivRe.FindAllStringSubmatch(dom, -1)
	if len(divs) != wantCharts {
		t.Errorf("%s: %d chart elements, want %d", filepath.Base(page), len(divs), wantCharts)
	}
	if n, _ := strconv.Atoi(attr("charts")); n != len(divs) {
		t.Errorf("%s: %d of %d charts drawn", filepath.Base(page), n, len(divs))
	}
	for _, d := range divs {
		m := drawnRe.FindStringSubmatch(d[2])
		if m == nil {
			t.Errorf("%s: %s was not drawn", filepath.Base(page), d[1])
			continue
		}
		counts := strings.Fields(m[1])
		if len(counts) == 0 {
			t.Errorf("%s: %s has no series", filepath.Base(page), d[1])
		}
		for i, n := range counts {
			if n == "0" {
				t.Errorf("%s: %s series %d drew no data", filepath.Base(page), d[1], i)
			}
		}
	}
	if canvases := strings.Count(dom, "<canvas"); canvases < len(divs) {
		t.Errorf("%s: %d canvases for %d charts", filepath.Base(page), canvases, len(divs))
	}
	if hasCause {
		bottom, _ := strconv.Atoi(attr("first-cause-bottom"))
		vp := strings.Split(attr("viewport"), "x")
		h, _ := strconv.Atoi(vp[len(vp)-1])
		if bottom <= 0 || bottom > h || h > 800 {
			t.Errorf("%s: the first cause ends at y=%d, viewport %s: not on the first screen of 1280x800", filepath.Base(page), bottom, attr("viewport"))
		}
	}
	t.Logf("%s: %d charts drawn in %s ms", filepath.Base(page), len(divs), attr("render-ms"))
	return dom
}

// screenshot saves a screenshot and checks it shows some colour of the plots (not a blank page).
func screenshot(t *testing.T, c *chromium, url, shot string, w, h int, wantColour bool) {
	t.Helper()
	_ = os.Remove(shot)
	c.run(fmt.Sprintf("--window-size=%d,%d", w, h), "--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if wantColour {
		if n := colourPixels(img); n < 300 {
			t.Errorf("%s: %d coloured pixels: the plot did not render", filepath.Base(shot), n)
		}
	}
	t.Logf("screenshot: %s", shot)
}

// colourPixels counts saturated pixels (the plots' series colours; the page's text and rules are grey).
func colourPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl)>>8, min(r, g, bl)>>8
			if hi-lo > 60 {
				n++
			}
		}
	}
	return n
}

// TestIntegrationHTMLInChromium opens reports in a real headless browser (Debian's chromium, installed by
// hack/deps.sh): the sample report with every kind of plot, and reports of real runs on the lab (testdata/:
// `lab net`'s path matrix, `bench disk`, and `run --lab` of the demo when recorded; KUBESLOW_LAB_REPORT adds
// one). Each
// page must load without console errors, draw every chart with data in each of its series, and show its
// first cause on the first screen at 1280x800. Screenshots — the first screen, the whole page, and each plot
// alone — are saved in out/artifacts/ (look at them).
func TestIntegrationHTMLInChromium(t *testing.T) {
	if os.Getenv("KUBESLOW_INTEGRATION") == "" {
		t.Skip("integration test: set KUBESLOW_INTEGRATION=1 (needs chromium from hack/deps.sh, and root)")
	}
	c := newChromium(t)
	artifacts, err := filepath.Abs(filepath.Join("..", "..", "out", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := []struct {
		name string
		rep  *result.Report
	}{{"sample", fullSample()}}
	// Reports of real runs on this machine's lab: `lab net` (the path matrix through network namespaces),
	// `bench disk` (a real KS-DISK-SYNC), `run --lab` of the demo when recorded; KUBESLOW_LAB_REPORT adds one.
	real := []string{"lab-net.json.gz", "bench-disk.json.gz"}
	if _, err := os.Stat(filepath.Join("testdata", "lab-run.json.gz")); err == nil {
		real = append(real, "lab-run.json.gz")
	}
	for _, name := range real {
		rep, err := readReport(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pages = append(pages, struct {
			name string
			rep  *result.Report
		}{strings.TrimSuffix(name, ".json.gz"), rep})
	}
	if lab := os.Getenv("KUBESLOW_LAB_REPORT"); lab != "" {
		rep, err := readReport(lab)
		if err != nil {
			t.Fatalf("KUBESLOW_LAB_REPORT: %v", err)
		}
		pages = append(pages, struct {
			name string
			rep  *result.Report
		}{"given", rep})
	}
	for _, pg := range pages {
		page := filepath.Join(c.dir, pg.name+".html")
		var b bytes.Buffer
		if err := WriteHTML(&b, pg.rep); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		var specs []chartSpec
		for _, res := range pg.rep.Results {
			specs = append(specs, resultCharts(pg.rep, res)...)
		}
		checkPage(t, c, page, len(specs), len(pg.rep.Findings) > 0)
		screenshot(t, c, "file://"+page, filepath.Join(artifacts, "report-"+pg.name+"-first-screen.png"), 1280, 800, false)
		screenshot(t, c, "file://"+page, filepath.Join(artifacts, "report-"+pg.name+"-full.png"), 1280, 6000, true)
		if pg.name != "sample" {
			continue
		}
		// The diff of the sample with a run twice as slow: every paired plot drawn with both runs' series.
		after := fullSample()
		for i := range after.Results {
			for j := range after.Results[i].Series {
				for k := range after.Results[i].Series[j].Points {
					after.Results[i].Series[j].Points[k].V *= 2
				}
			}
		}
		diff := filepath.Join(c.dir, "diff.html")
		b.Reset()
		if err := WriteDiffHTML(&b, pg.rep, after, Compare(pg.rep, after, DefaultTolerance)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(diff, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, res := range after.Results {
			n += len(diffCharts(pg.rep, after, *pg.rep.Result(res.Name), res))
		}
		checkPage(t, c, diff, n, false)
		screenshot(t, c, "file://"+diff, filepath.Join(artifacts, "diff-sample-full.png"), 1280, 6000, true)
		// One picture per plot, named by its result and kind (docs/img/ holds some of them).
		i := 0
		for _, res := range pg.rep.Results {
			for _, s := range resultCharts(pg.rep, res) {
				name := "plot-" + slug(res.Name+"-"+s.key) + ".png"
				screenshot(t, c, fmt.Sprintf("file://%s#plot=chart-%d", page, i), filepath.Join(artifacts, name), 1000, s.Height+50, true)
				i++
			}
		}
	}
}

func slug(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
	s = regexp.MustCompile(`-+`).ReplaceAllString(s, "-")
	return strings.Trim(s[:min(len(s), 40)], "-")
}

// readReport reads a JSON report, gzipped when its name ends in .gz.
func readReport(path string) (*result.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if _, err := out.ReadFrom(zr); err != nil {
			return nil, err
		}
		b = out.Bytes()
	}
	var r result.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, r.Validate()
}
