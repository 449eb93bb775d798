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
// agent serve`, pinned to CPU 0), each generator pinned to CPU 1 with 8 connections, keep-alive and
// new-connection modes, 5 rounds in which the generators take turns (the order alternates between rounds, so a
// drift of the machine does not favour one). It prints requests/s and CPU per request of kubeslow's epoll
// engine, its goroutine engine and wrk, and the ratios to wrk: the median over rounds of each round's ratio.
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
	const dur, rounds = 5 * time.Second, 5
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
	// run runs one generator for dur pinned to CPU 1: its requests/s and CPU (user + system) per request.
	run := func(gen string, newConn bool) sample {
		args := []string{bin, "bench", "http", url, "-c", "8", "-d", dur.String(), "-o", "json", "--engine", gen}
		if gen == "wrk" {
			args = []string{wrk, "-t1", "-c8", "-d" + dur.String(), "-s", script(newConn), url}
		} else if newConn {
			args = append(args, "--new-conn")
		}
		cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", "1"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		var rps float64
		if gen == "wrk" {
			m := rpsRe.FindSubmatch(out)
			if m == nil {
				t.Fatalf("wrk output: %s", out)
			}
			rps, _ = strconv.ParseFloat(string(m[1]), 64)
		} else {
			var rep result.Report
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatal(err)
			}
			for _, m := range rep.Results[0].Metrics {
				if m.Name == "requests_per_second" {
					rps = m.Value
				}
			}
		}
		return sample{rps, cpu / (rps * dur.Seconds())}
	}
	median := func(v []float64) float64 {
		v = append([]float64(nil), v...)
		sort.Float64s(v)
		return v[len(v)/2]
	}
	gens := []string{EngineEpoll, EngineGo, "wrk"}
	for _, newConn := range []bool{false, true} {
		got := map[string][]sample{}
		for round := 0; round < rounds; round++ {
			order := gens
			if round%2 == 1 {
				order = []string{gens[2], gens[1], gens[0]}
			}
			for _, g := range order {
				got[g] = append(got[g], run(g, newConn))
			}
		}
		mode := "keep-alive"
		if newConn {
			mode = "new connection per request"
		}
		for _, g := range gens[:2] {
			var rpsRatio, cpuRatio, rps, cpu, wrps, wcpu []float64
			for i, s := range got[g] {
				w := got["wrk"][i]
				rpsRatio, cpuRatio = append(rpsRatio, s.rps/w.rps), append(cpuRatio, s.cpuPerReq/w.cpuPerReq)
				rps, cpu, wrps, wcpu = append(rps, s.rps), append(cpu, s.cpuPerReq*1e6), append(wrps, w.rps), append(wcpu, w.cpuPerReq*1e6)
			}
			t.Logf("%s, kubeslow %s engine vs wrk, %d rounds, medians: kubeslow %.0f req/s (%.1f µs CPU/req), wrk %.0f req/s (%.1f µs CPU/req); "+
				"ratio kubeslow/wrk: requests/s %.2f (rounds %s), CPU per request %.2f (rounds %s)",
				mode, g, rounds, median(rps), median(cpu), median(wrps), median(wcpu), median(rpsRatio), fmtAll(rpsRatio), median(cpuRatio), fmtAll(cpuRatio))
		}
	}
}

func fmtAll(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(s, " ")
}
