package report

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIntegrationHTMLInChromium opens the report in a real headless browser (Debian's chromium, installed by
// hack/deps.sh), in a network namespace of its own with only loopback, so the page cannot fetch anything:
// the page must load without console errors, the browser's DOM must hold every plot, and the screenshot
// must show the plots' colours (they rendered). The screenshot of the whole page and one of each kind of plot
// (percentiles, pod start-up CDF per phase, phases per node, a long time series with change points, the path
// matrix's ratios and its medians with their spread) are kept in out/artifacts/ (look at them).
func TestIntegrationHTMLInChromium(t *testing.T) {
	if os.Getenv("KUBESLOW_INTEGRATION") == "" {
		t.Skip("integration test: set KUBESLOW_INTEGRATION=1 (needs chromium from hack/deps.sh, and root)")
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (hack/deps.sh installs it): %v", err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	rep := sampleReport()
	rep.Results = append(rep.Results, plotSamples()...)
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	artifacts, err := filepath.Abs(filepath.Join("..", "..", "out", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, "report-chromium.png")
	_ = os.Remove(shot)

	run := func(args ...string) (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		base := []string{"-n", browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0"}
		cmd := exec.CommandContext(ctx, "unshare", append(base, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	dom, logs := run("--dump-dom", "file://"+page)
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "net::ERR") {
			t.Errorf("browser reported: %s", l)
		}
	}
	// sampleReport's 4, the path matrix's 4 (3 spreads, the ratios), the disk series.
	if n := strings.Count(dom, "<svg "); n != 9 {
		t.Errorf("browser DOM has %d plots, want 9", n)
	}
	if !strings.Contains(dom, "KS-POD-SLO") {
		t.Error("browser DOM lacks the findings")
	}
	run("--screenshot="+shot, "--window-size=1200,4000", "--hide-scrollbars", "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Each series colour of the plots must cover a visible area (bars, legend squares, lines).
	for _, hex := range palette[:4] {
		if n := countColour(img, hex); n < 200 {
			t.Errorf("colour %s covers %d pixels of the screenshot: plots did not render", hex, n)
		}
	}
	t.Logf("screenshot: %s", shot)

	// One screenshot per kind of plot, each on a page of its own.
	ps, _ := resultPlots(rep.Results[0])
	np, _ := resultPlots(rep.Results[4])
	disk, _ := resultPlots(rep.Results[5])
	heightRe := regexp.MustCompile(`<svg [^>]*height="(\d+)"`)
	for _, k := range []struct {
		name    string
		plot    template.HTML
		colours int // palette colours it must show
	}{
		{"percentiles", ps[0], 4}, {"startup-cdf", ps[1], 4}, {"phases-per-node", ps[2], 4},
		{"series-change-points", disk[0], 1}, {"path-ratios", np[3], 3}, {"path-spread", np[0], 1},
	} {
		m := heightRe.FindStringSubmatch(string(k.plot))
		if m == nil {
			t.Fatalf("%s: no svg height", k.name)
		}
		h, _ := strconv.Atoi(m[1])
		p := filepath.Join(dir, k.name+".html")
		if err := os.WriteFile(p, []byte(`<!DOCTYPE html><html><head><meta charset="utf-8"><style>figure{margin:0}figcaption{font-size:13px;color:#444}</style></head><body style="margin:8px;font-family:DejaVu Sans">`+string(k.plot)+`</body></html>`), 0o644); err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(artifacts, "plot-"+k.name+".png")
		_ = os.Remove(shot)
		run("--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", plotWidth+20, h+50), "--hide-scrollbars", "file://"+p)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot of %s: %v", k.name, err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, hex := range palette[:k.colours] {
			if n := countColour(img, hex); n < 40 {
				t.Errorf("%s: colour %s covers %d pixels: the plot did not render", k.name, hex, n)
			}
		}
		t.Logf("screenshot: %s", shot)
	}
}

func countColour(img image.Image, hex string) int {
	var want color.RGBA
	for i, p := range []*uint8{&want.R, &want.G, &want.B} {
		var v uint8
		for _, c := range hex[1+2*i : 3+2*i] {
			v = v*16 + uint8(strings.IndexRune("0123456789abcdef", c))
		}
		*p = v
	}
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want.R) && near(g>>8, want.G) && near(bl>>8, want.B) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool { d := int(a) - int(b); return d >= -3 && d <= 3 }
