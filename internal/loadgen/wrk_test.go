package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/labtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestCompareWrk is the generator's benchmark against Debian's wrk, in one run: the same server (`kubeslow
// agent serve`, pinned to CPU 0), each generator pinned to CPU 1 with 8 connections, alternating, 3 rounds,
// keep-alive and new-connection modes. It prints requests/s and CPU per request of each and their ratios.
// Set KUBESLOW_BENCH_WRK=1 to run it (a benchmark, not a pass/fail test).
func TestCompareWrk(t *testing.T) {
	if os.Getenv("KUBESLOW_BENCH_WRK") == "" {
		t.Skip("benchmark: set KUBESLOW_BENCH_WRK=1")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (hack/deps.sh installs it)")
	}
	bin := labtest.Binary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, "taskset", "-c", "0", bin, "agent", "serve", "--listen", "127.0.0.1:0")
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + strings.TrimSpace(strings.TrimPrefix(line, "listening ")) + "/"
	dir := t.TempDir()
	const dur = 5 * time.Second
	script := func(newConn bool) string {
		p := filepath.Join(dir, fmt.Sprintf("post-%v.lua", newConn))
		s := "wrk.method = \"POST\"\nwrk.body = string.rep(\"x\", 3072)\nwrk.headers[\"Content-Type\"] = \"application/octet-stream\"\n"
		if newConn {
			s += "wrk.headers[\"Connection\"] = \"close\"\n"
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rpsRe := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	type sample struct{ rps, cpuPerReq float64 }
	runOne := func(args ...string) (string, time.Duration) {
		cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", "1"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return string(out), cpu
	}
	for _, newConn := range []bool{false, true} {
		var ours, theirs []sample
		for round := 0; round < 3; round++ {
			out, cpu := runOne(wrk, "-t1", "-c8", "-d"+dur.String(), "-s", script(newConn), url)
			m := rpsRe.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("wrk output: %s", out)
			}
			rps, _ := strconv.ParseFloat(m[1], 64)
			theirs = append(theirs, sample{rps, cpu.Seconds() / (rps * dur.Seconds())})

			args := []string{bin, "bench", "http", url, "-c", "8", "-d", dur.String(), "-o", "json"}
			if newConn {
				args = append(args, "--new-conn")
			}
			out, cpu = runOne(args...)
			var rep result.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			var our float64
			for _, m := range rep.Results[0].Metrics {
				if m.Name == "requests_per_second" {
					our = m.Value
				}
			}
			ours = append(ours, sample{our, cpu.Seconds() / (our * dur.Seconds())})
		}
		med := func(s []sample, f func(sample) float64) float64 {
			v := make([]float64, len(s))
			for i := range s {
				v[i] = f(s[i])
			}
			sort.Float64s(v)
			return v[len(v)/2]
		}
		rps := func(s sample) float64 { return s.rps }
		cpr := func(s sample) float64 { return s.cpuPerReq * 1e6 }
		mode := "keep-alive"
		if newConn {
			mode = "new connection per request"
		}
		t.Logf("%s, 3 rounds alternating, medians: kubeslow %.0f req/s (%.1f µs CPU/req), wrk %.0f req/s (%.1f µs CPU/req): "+
			"throughput ratio kubeslow/wrk %.2f, CPU per request ratio %.2f; all rounds kubeslow %v wrk %v",
			mode, med(ours, rps), med(ours, cpr), med(theirs, rps), med(theirs, cpr), med(ours, rps)/med(theirs, rps), med(ours, cpr)/med(theirs, cpr), ours, theirs)
	}
}
