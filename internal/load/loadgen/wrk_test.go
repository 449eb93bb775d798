package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestCompareWrk is the generator's benchmark against Debian's wrk, in one run, against two servers: kubeslow's
// own (`kubeslow agent serve`) and one it did not write (Debian's nginx-light, one worker, answering 404 with
// its defaults otherwise). Each server is pinned to CPU 0; the generators are not pinned (they share the
// machine with the server, as they do when a user runs them). The cells: both generators at the same thread
// count, wrk's default of 2 (`-t 2` and `--threads 2`) and 1, with 8 and 32 keep-alive connections and 8
// connections with a new connection per request. (kubeslow's own default against a server on this host is
// half the cores, 1 here: the one-thread cells.) In each round every cell runs kubeslow's epoll engine and wrk
// once, the order alternating between rounds (so a drift of the machine favours neither). It prints a table
// row per cell: median requests/s and CPU (user + system) per request of each, and the median of the rounds'
// ratios with their min–max. Set KUBESLOW_BENCH_WRK=1 to run it (a benchmark, not a pass/fail test);
// KUBESLOW_BENCH_WRK_ROUNDS (default 5) and KUBESLOW_BENCH_WRK_DURATION (default 4s) change its length, and
// KUBESLOW_BENCH_WRK_CELLS (a regular expression on server/threads/conns/mode, e.g. nginx/1/8/keep-alive)
// keeps only the cells it matches.
func TestCompareWrk(t *testing.T) {
	if os.Getenv("KUBESLOW_BENCH_WRK") == "" {
		t.Skip("benchmark: set KUBESLOW_BENCH_WRK=1")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (hack/deps.sh installs it)")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (hack/deps.sh installs nginx-light)")
	}
	rounds, dur := 5, 4*time.Second
	if v := os.Getenv("KUBESLOW_BENCH_WRK_ROUNDS"); v != "" {
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			t.Fatalf("KUBESLOW_BENCH_WRK_ROUNDS=%q", v)
		}
	}
	if v := os.Getenv("KUBESLOW_BENCH_WRK_DURATION"); v != "" {
		if dur, err = time.ParseDuration(v); err != nil || dur <= 0 {
			t.Fatalf("KUBESLOW_BENCH_WRK_DURATION=%q", v)
		}
	}
	bin := labtest.Binary(t)
	dir := t.TempDir()
	servers := []struct{ name, url string }{
		{"kubeslow", startAgentServe(t, bin)},
		{"nginx", startNginx(t, nginx, dir)},
	}
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
	// run runs one generator for dur: its requests/s and CPU (user + system) per request.
	run := func(c *wrkCell, gen string) sample {
		args := []string{bin, "bench", "http", c.url, "-c", strconv.Itoa(c.conns), "-d", dur.String(), "-o", "json", "--threads", strconv.Itoa(c.threads)}
		if c.newConn {
			args = append(args, "--new-conn")
		}
		if gen == "wrk" {
			args = []string{wrk, "-t" + strconv.Itoa(c.threads), "-c" + strconv.Itoa(c.conns), "-d" + dur.String(), "-s", script(c.newConn), c.url}
		}
		cmd := exec.Command(args[0], args[1:]...)
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
		if rps <= 0 {
			t.Fatalf("%v: no requests/s in %s", args, out)
		}
		return sample{rps, cpu / (rps * dur.Seconds())}
	}
	var cells []*wrkCell
	for _, s := range servers {
		for _, th := range []int{2, 1} {
			for _, c := range []int{8, 32} {
				cells = append(cells, &wrkCell{server: s.name, url: s.url, threads: th, conns: c})
			}
			cells = append(cells, &wrkCell{server: s.name, url: s.url, threads: th, conns: 8, newConn: true})
		}
	}
	if v := os.Getenv("KUBESLOW_BENCH_WRK_CELLS"); v != "" {
		re, err := regexp.Compile(v)
		if err != nil {
			t.Fatalf("KUBESLOW_BENCH_WRK_CELLS=%q: %v", v, err)
		}
		cells = slices.DeleteFunc(cells, func(c *wrkCell) bool { return !re.MatchString(c.name()) })
		if len(cells) == 0 {
			t.Fatalf("KUBESLOW_BENCH_WRK_CELLS=%q matches no cell", v)
		}
	}
	// The machine's load before and after: the ratios are only as good as the machine was quiet.
	load := func() string { b, _ := os.ReadFile("/proc/loadavg"); return strings.TrimSpace(string(b)) }
	loadBefore := load()
	// Round after round over every cell, so that a drift of the shared machine spreads over all of them.
	for round := 0; round < rounds; round++ {
		for _, c := range cells {
			order := []string{"kubeslow", "wrk"}
			if round%2 == 1 {
				order = []string{"wrk", "kubeslow"}
			}
			var k, w sample
			for _, g := range order {
				if g == "wrk" {
					w = run(c, g)
				} else {
					k = run(c, g)
				}
			}
			c.ks, c.wrk = append(c.ks, k), append(c.wrk, w)
			c.rpsRatio, c.cpuRat = append(c.rpsRatio, k.rps/w.rps), append(c.cpuRat, k.cpuPerReq/w.cpuPerReq)
		}
	}
	t.Logf("%d rounds of %s; load average before %s, after %s", rounds, dur, loadBefore, load())
	t.Logf("medians; ratios kubeslow/wrk as median (min–max) of the rounds' ratios")
	t.Logf("| server | threads | conns | mode | kubeslow req/s | wrk req/s | **req/s ratio** | kubeslow CPU/req | wrk CPU/req | **CPU ratio** |")
	t.Logf("|---|---|---|---|---|---|---|---|---|---|")
	below := 0
	for _, c := range cells {
		rr, cr := spread(c.rpsRatio), spread(c.cpuRat)
		if rr[1] < 1 || cr[1] > 1 {
			below++
		}
		t.Logf("| %s | %d | %d | %s | %s | %s | **%.2f** (%.2f–%.2f) | %.1f µs | %.1f µs | **%.2f** (%.2f–%.2f) |",
			c.server, c.threads, c.conns, c.mode(), thousands(median(rps(c.ks))), thousands(median(rps(c.wrk))), rr[1], rr[0], rr[2],
			median(cpuUs(c.ks)), median(cpuUs(c.wrk)), cr[1], cr[0], cr[2])
	}
	t.Logf("cells whose median misses the goal (req/s ratio >= 1, CPU ratio <= 1): %d of %d", below, len(cells))
}

// wrkCell is one cell of TestCompareWrk: a server, both generators' thread and connection counts, the mode,
// and each round's samples and ratios.
type wrkCell struct {
	server, url      string
	threads, conns   int
	newConn          bool
	ks, wrk          []sample
	rpsRatio, cpuRat []float64
}

func (c *wrkCell) mode() string {
	if c.newConn {
		return "new-conn"
	}
	return "keep-alive"
}

// name is what KUBESLOW_BENCH_WRK_CELLS matches: server/threads/conns/mode, e.g. nginx/1/8/keep-alive.
func (c *wrkCell) name() string {
	return fmt.Sprintf("%s/%d/%d/%s", c.server, c.threads, c.conns, c.mode())
}

type sample struct{ rps, cpuPerReq float64 }

func rps(s []sample) []float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = x.rps
	}
	return v
}

func cpuUs(s []sample) []float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = x.cpuPerReq * 1e6
	}
	return v
}

func median(v []float64) float64 { return spread(v)[1] }

// spread is min, median, max.
func spread(v []float64) [3]float64 {
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	return [3]float64{v[0], v[len(v)/2], v[len(v)-1]}
}

func thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// startAgentServe starts `kubeslow agent serve` pinned to CPU 0 and returns its URL; the test's end stops it.
func startAgentServe(t *testing.T, bin string) string {
	srv := exec.Command("taskset", "-c", "0", bin, "agent", "serve", "--listen", "127.0.0.1:0")
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + strings.TrimSpace(strings.TrimPrefix(line, "listening ")) + "/"
}

// startNginx starts Debian's nginx with one worker pinned to CPU 0, answering every request 404 (case D's
// server), everything else at nginx's defaults (keep-alive up to 1,000 requests per connection), and returns
// its URL once it accepts connections; the test's end stops it (SIGTERM to the master, which stops the worker).
func startNginx(t *testing.T, nginx, dir string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	conf := filepath.Join(dir, "nginx.conf")
	c := fmt.Sprintf(`worker_processes 1;
daemon off;
master_process on;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  server { listen %[2]s; location / { return 404; } }
}
`, dir, addr)
	if err := os.WriteFile(conf, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command("taskset", "-c", "0", nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
			return "http://" + addr + "/"
		}
		if ctx.Err() != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not accept connections on %s: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
