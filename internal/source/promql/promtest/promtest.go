// Package promtest runs a real Prometheus (Debian's prometheus and promtool) for tests: a TSDB backfilled from
// scrapes in the text format at chosen instants, served on a loopback port, stopped by PID at the end of the
// test.
package promtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// Scrape is one scrape in the Prometheus text format, at an instant.
type Scrape struct {
	At   time.Time
	Text []byte
	// Labels are added to every series (job and instance, as a scrape would).
	Labels map[string]string
}

// OpenMetrics merges scrapes into one OpenMetrics document with timestamps, as promtool's backfill reads it:
// each family once, its samples in time order.
func OpenMetrics(scrapes []Scrape) ([]byte, error) {
	merged := map[string]*dto.MetricFamily{}
	sort.Slice(scrapes, func(i, j int) bool { return scrapes[i].At.Before(scrapes[j].At) })
	for _, s := range scrapes {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(s.Text))
		if err != nil {
			return nil, err
		}
		for name, f := range fams {
			m := merged[name]
			if m == nil {
				m = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type}
				merged[name] = m
			}
			for _, x := range f.Metric {
				x.TimestampMs = proto.Int64(s.At.UnixMilli())
				for k, v := range s.Labels {
					x.Label = append(x.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v)})
				}
				m.Metric = append(m.Metric, x)
			}
		}
	}
	names := make([]string, 0, len(merged))
	for n := range merged {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		if _, err := expfmt.MetricFamilyToOpenMetrics(&b, merged[n]); err != nil {
			return nil, fmt.Errorf("family %s: %w", n, err)
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes(), nil
}

// ReadScrape reads a recorded scrape in the text format (gunzipped when the name ends in .gz).
func ReadScrape(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(gz); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// Binaries returns the paths of prometheus and promtool, skipping the test when they are not installed
// (hack/deps.sh installs them).
func Binaries(t testing.TB) (prometheus, promtool string) {
	t.Helper()
	p, err1 := exec.LookPath("prometheus")
	pt, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		t.Skip("prometheus/promtool not installed (hack/deps.sh installs Debian's prometheus)")
	}
	return p, pt
}

// Start backfills a TSDB from scrapes and serves it on a loopback port; it returns the server's URL.
func Start(t testing.TB, scrapes []Scrape) string {
	t.Helper()
	prom, promtool := Binaries(t)
	dir := t.TempDir()
	om, err := OpenMetrics(scrapes)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "backfill.om")
	if err := os.WriteFile(in, om, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", in, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool backfill: %v\n%s", err, out)
	}
	return Serve(t, prom, dir, data, "")
}

// Serve starts prometheus on a free loopback port with the given TSDB directory and scrape configuration ("":
// none), and stops it (by PID) when the test ends.
func Serve(t testing.TB, prom, dir, data, config string) string {
	t.Helper()
	cfg := filepath.Join(dir, "prometheus.yml")
	if config == "" {
		config = "global:\n  evaluation_interval: 1h\n"
	}
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.listen-address="+addr,
		"--storage.tsdb.retention.time=100y", "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		logf.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus exited:\n%s", tail(string(b)))
		default:
		}
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus not ready after 30 s:\n%s", tail(string(b)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
