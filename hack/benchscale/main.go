//go:build ignore

// benchscale is hack/bench-scale.sh's helper (go run hack/benchscale/main.go CMD ...; never built in CI):
//
//	fill -per-node 6                      bare pods on every kwok node of the lab (nodeName set, no scheduler), until all Running
//	measure -label L -nodes N -- ARGV...  runs ARGV (a kubeslow run with -o json --out-dir DIR), prints one JSON line
//	table FILE.jsonl                      the markdown table and the growth exponents between sizes
//
// measure reports the run's wall time, exit code, kubeslow's peak RSS (the child's rusage and kubeslow.overhead's
// VmHWM), the API requests and bytes read that kubeslow's own client counted (kubeslow.overhead: total, by verb and
// resource, by measurement), each measurement's wall time, the node agents' peak RSS (sampled from /proc while
// the run lasts), and the control plane's extra CPU: kube-apiserver's and etcd's CPU time (/proc/PID/stat, what
// their process_cpu_seconds_total exports) during the run minus the same over an idle window of the same length
// right after it (at most 30 s, scaled to the run's length).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

const ns = "scale-bench"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchscale fill|measure|table ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fill":
		err = fill(os.Args[2:])
	case "measure":
		err = measure(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

func client() (kubernetes.Interface, error) {
	d, err := lab.DefaultDirs()
	if err != nil {
		return nil, err
	}
	cfg, err := lab.AdminRESTConfig(d)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return kubernetes.NewForConfig(cfg)
}

func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	perNode := fs.Int("per-node", 6, "pods per kwok node")
	parallel := fs.Int("parallel", 48, "creates in flight")
	_ = fs.Parse(args)
	ctx := context.Background()
	c, nodes, err := labNodes(ctx)
	if err != nil {
		return err
	}
	var kwok []string
	for _, n := range nodes {
		if kube.IsSimulated(&n) {
			kwok = append(kwok, n.Name)
		}
	}
	want := len(kwok) * *perNode
	if want > lab.MaxKwokPods {
		return fmt.Errorf("%d pods: the kwok nodes hold %d", want, lab.MaxKwokPods)
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(*parallel)
	var made atomic.Int64
	for i := range want {
		g.Go(func() error {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%05d", i), Namespace: ns, Labels: map[string]string{"app": "scale-bench"}},
				Spec: corev1.PodSpec{NodeName: kwok[i%len(kwok)], Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "c", Image: "kubeslow.local/pause:1"}}}}
			_, err := c.CoreV1().Pods(ns).Create(gctx, p, metav1.CreateOptions{})
			if err != nil && !strings.Contains(err.Error(), "already exists") {
				return err
			}
			if n := made.Add(1); n%5000 == 0 {
				fmt.Fprintf(os.Stderr, "  %d/%d pods created (%s)\n", n, want, time.Since(start).Round(time.Second))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "  %d pods created on %d kwok nodes in %s; waiting for Running\n", want, len(kwok), time.Since(start).Round(time.Second))
	for deadline := time.Now().Add(15 * time.Minute); ; {
		running, err := countRunning(ctx, c)
		if err != nil {
			return err
		}
		if running >= want {
			fmt.Fprintf(os.Stderr, "  %d pods Running after %s\n", running, time.Since(start).Round(time.Second))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods Running after 15 minutes", running, want)
		}
		time.Sleep(10 * time.Second) // polling the apiserver, the source of truth, every 10 s
	}
}

// labNodes is the lab's admin client and its nodes.
func labNodes(ctx context.Context) (kubernetes.Interface, []corev1.Node, error) {
	c, err := client()
	if err != nil {
		return nil, nil, err
	}
	nodes, err := listNodes(ctx, c)
	return c, nodes, err
}

func listNodes(ctx context.Context, c kubernetes.Interface) ([]corev1.Node, error) {
	var out []corev1.Node
	o := metav1.ListOptions{Limit: 500}
	for {
		l, err := c.CoreV1().Nodes().List(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		o.Continue = l.Continue
	}
}

func countRunning(ctx context.Context, c kubernetes.Interface) (int, error) {
	n := 0
	o := metav1.ListOptions{Limit: 1000, FieldSelector: "status.phase=Running"}
	for {
		l, err := c.CoreV1().Pods(ns).List(ctx, o)
		if err != nil {
			return 0, err
		}
		n += len(l.Items)
		if l.Continue == "" {
			return n, nil
		}
		o.Continue = l.Continue
	}
}

// cpuSeconds is utime+stime of pid (/proc/PID/stat, in clock ticks of 1/100 s on Linux).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil
}

func cpCPU(pids []int) (float64, error) {
	sum := 0.0
	for _, p := range pids {
		s, err := cpuSeconds(p)
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// agentPeak samples the node agents' (kubeslow agent ...) VmHWM from /proc every 250 ms until stop; the peak
// per agent process, in bytes.
func agentPeak(stop <-chan struct{}) func() []float64 {
	var mu sync.Mutex
	peaks := map[int]float64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range procs {
				b, err := os.ReadFile(p)
				if err != nil {
					continue
				}
				argv := strings.Split(string(b), "\x00")
				if len(argv) < 2 || filepath.Base(argv[0]) != "kubeslow" || argv[1] != "agent" {
					continue
				}
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				if hwm := vmHWM(pid); hwm > 0 {
					mu.Lock()
					peaks[pid] = max(peaks[pid], hwm)
					mu.Unlock()
				}
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() []float64 {
		<-done
		var out []float64
		for _, v := range peaks {
			out = append(out, v)
		}
		sort.Float64s(out)
		return out
	}
}

func vmHWM(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb * 1024
		}
	}
	return 0
}

// Row is one measured run.
type Row struct {
	Label      string  `json:"label"`
	Nodes      int     `json:"nodes"` // kwok + real
	Pods       int     `json:"pods"`
	Wall       float64 `json:"wallSeconds"`
	Exit       int     `json:"exit"`
	PeakRSS    float64 `json:"peakRSSBytes"`    // the child's lifetime peak (rusage)
	RunPeakRSS float64 `json:"runPeakRSSBytes"` // kubeslow.overhead's peak_rss
	Requests   float64 `json:"requests"`
	Bytes      float64 `json:"bytes"`
	// ByVerb is requests by "verb resource"; Measurements each measurement's wall time, requests and bytes.
	ByVerb       map[string]float64      `json:"byVerb"`
	Measurements map[string]*Measurement `json:"measurements"`
	CPRunCPU     float64                 `json:"cpRunCPUSeconds"`
	CPIdleCPU    float64                 `json:"cpIdleCPUSeconds"`
	AgentPeaks   []float64               `json:"agentPeakRSSBytes"`
	Statuses     map[string]string       `json:"statuses"`
}

// Measurement is one measurement's share of a run.
type Measurement struct {
	Wall     float64            `json:"wallSeconds"`
	Requests float64            `json:"requests"`
	Bytes    float64            `json:"bytes"`
	ByVerb   map[string]float64 `json:"byVerb"`
}

type report struct {
	Results []struct {
		Name    string    `json:"name"`
		Status  string    `json:"status"`
		Start   time.Time `json:"start"`
		End     time.Time `json:"end"`
		Metrics []struct {
			Name   string            `json:"name"`
			Value  float64           `json:"value"`
			Labels map[string]string `json:"labels"`
		} `json:"metrics"`
	} `json:"results"`
}

func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ExitOnError)
	label := fs.String("label", "", "row label (quick, full, api-tier)")
	out := fs.String("out-dir", "", "the run's --out-dir (report.json is read from it)")
	idle := fs.Bool("idle", true, "measure the control plane over an idle window after the run")
	idleMax := fs.Duration("idle-max", 30*time.Second, "the idle window's length at most (its CPU is scaled to the run's length)")
	_ = fs.Parse(args)
	argv := fs.Args()
	if len(argv) == 0 || *out == "" {
		return fmt.Errorf("measure: -out-dir and a command are needed")
	}
	d, err := lab.DefaultDirs()
	if err != nil {
		return err
	}
	var pids []int
	for _, name := range []string{lab.KubeAPIServer, lab.Etcd} {
		pid, err := lab.ControlPlanePID(d, name)
		if err != nil {
			return err
		}
		pids = append(pids, pid)
	}
	ctx := context.Background()
	c, nodes, err := labNodes(ctx)
	if err != nil {
		return err
	}
	pods, err := countRunning(ctx, c)
	if err != nil {
		return err
	}
	row := Row{Label: *label, Nodes: len(nodes), Pods: pods, Measurements: map[string]*Measurement{}, ByVerb: map[string]float64{}, Statuses: map[string]string{}}
	stop := make(chan struct{})
	agents := agentPeak(stop)
	cpu0, err := cpCPU(pids)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	t0 := time.Now()
	runErr := cmd.Run()
	row.Wall = time.Since(t0).Seconds()
	cpu1, err := cpCPU(pids)
	if err != nil {
		return err
	}
	close(stop)
	row.AgentPeaks = agents()
	row.CPRunCPU = cpu1 - cpu0
	if cmd.ProcessState != nil {
		row.Exit = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			row.PeakRSS = float64(ru.Maxrss) * 1024
		}
	} else if runErr != nil {
		return fmt.Errorf("%v: %w", argv, runErr)
	}
	if *idle {
		// The idle window: nothing of kubeslow's running (its cleanup is done: it ran inside the command), as long
		// as the run up to -idle-max; the idle CPU is scaled to the run's length. A fixed window of wall time is
		// what is measured here, not a wait for an event.
		w := min(time.Duration(row.Wall*float64(time.Second)), *idleMax)
		t1 := time.Now()
		time.Sleep(w)
		cpu2, err := cpCPU(pids)
		if err != nil {
			return err
		}
		row.CPIdleCPU = (cpu2 - cpu1) * row.Wall / time.Since(t1).Seconds()
	}
	b, err := os.ReadFile(filepath.Join(*out, "report.json"))
	if err != nil {
		return fmt.Errorf("%w (kubeslow's stderr: %s)", err, lastLines(stderr.String(), 5))
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return err
	}
	for _, r := range rep.Results {
		row.Statuses[r.Name] = r.Status
		if r.Name == "kubeslow.overhead" {
			for _, m := range r.Metrics {
				switch m.Name {
				case "api_requests_total":
					row.Requests = m.Value
				case "api_bytes_read_total":
					row.Bytes = m.Value
				case "peak_rss":
					row.RunPeakRSS = m.Value
				case "api_requests":
					row.ByVerb[m.Labels["verb"]+" "+m.Labels["resource"]] += m.Value
				case "api_requests_by_measurement", "api_bytes_read_by_measurement":
					name := m.Labels["measurement"]
					ms := row.Measurements[name]
					if ms == nil {
						ms = &Measurement{ByVerb: map[string]float64{}}
						row.Measurements[name] = ms
					}
					if m.Name == "api_requests_by_measurement" {
						ms.Requests += m.Value
						ms.ByVerb[m.Labels["verb"]+" "+m.Labels["resource"]] += m.Value
					} else {
						ms.Bytes += m.Value
					}
				}
			}
			continue
		}
		ms := row.Measurements[r.Name]
		if ms == nil {
			ms = &Measurement{ByVerb: map[string]float64{}}
			row.Measurements[r.Name] = ms
		}
		ms.Wall = r.End.Sub(r.Start).Seconds()
	}
	return json.NewEncoder(os.Stdout).Encode(row)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], " | ")
}

func table(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("table FILE.jsonl")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	byLabel := map[string][]Row{}
	var labels []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r Row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
		if byLabel[r.Label] == nil {
			labels = append(labels, r.Label)
		}
		byLabel[r.Label] = append(byLabel[r.Label], r)
	}
	mib := func(v float64) string { return fmt.Sprintf("%.0f", v/(1<<20)) }
	for _, l := range labels {
		rows := byLabel[l]
		sort.Slice(rows, func(i, j int) bool { return rows[i].Nodes < rows[j].Nodes })
		fmt.Printf("\n### %s\n\n", l)
		fmt.Println("| nodes | pods | wall s | exit | requests | req/node | MiB read | peak RSS MiB | CP extra CPU s (run - idle) | agent peak MiB |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range rows {
			ag := "-"
			if len(r.AgentPeaks) > 0 {
				ag = mib(r.AgentPeaks[len(r.AgentPeaks)-1])
			}
			fmt.Printf("| %d | %d | %.1f | %d | %.0f | %.2f | %.1f | %s | %.1f (%.1f - %.1f) | %s |\n", r.Nodes, r.Pods, r.Wall, r.Exit, r.Requests,
				r.Requests/float64(r.Nodes), r.Bytes/(1<<20), mib(max(r.PeakRSS, r.RunPeakRSS)), r.CPRunCPU-r.CPIdleCPU, r.CPRunCPU, r.CPIdleCPU, ag)
		}
		if len(rows) >= 2 {
			a, z := rows[len(rows)-2], rows[len(rows)-1]
			fmt.Printf("\nGrowth from %d to %d nodes (exponent: 1 linear, 0 flat): wall %s, requests %s, bytes %s, peak RSS %s, control plane's extra CPU %s.\n",
				a.Nodes, z.Nodes, exponent(a.Wall, z.Wall, a.Nodes, z.Nodes), exponent(a.Requests, z.Requests, a.Nodes, z.Nodes),
				exponent(a.Bytes, z.Bytes, a.Nodes, z.Nodes), exponent(max(a.PeakRSS, a.RunPeakRSS), max(z.PeakRSS, z.RunPeakRSS), a.Nodes, z.Nodes),
				exponent(a.CPRunCPU-a.CPIdleCPU, z.CPRunCPU-z.CPIdleCPU, a.Nodes, z.Nodes))
		}
		// Per measurement: wall, requests and MiB at each size, and the growth exponent between the two
		// largest sizes (log(y2/y1)/log(n2/n1): 1 is linear, 0 flat).
		names := map[string]bool{}
		for _, r := range rows {
			for n := range r.Measurements {
				names[n] = true
			}
		}
		var sorted []string
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		fmt.Printf("\n| measurement | %s | growth (wall, requests, bytes) |\n|---|", strings.Join(func() []string {
			var h []string
			for _, r := range rows {
				h = append(h, fmt.Sprintf("%d nodes: s / req / KiB", r.Nodes))
			}
			return h
		}(), " | "))
		for range rows {
			fmt.Print("---:|")
		}
		fmt.Println("---|")
		for _, n := range sorted {
			fmt.Printf("| %s |", n)
			for _, r := range rows {
				m := r.Measurements[n]
				if m == nil {
					fmt.Print(" - |")
					continue
				}
				fmt.Printf(" %.1f / %.0f / %.0f |", m.Wall, m.Requests, m.Bytes/1024)
			}
			g := "-"
			if len(rows) >= 2 {
				a, z := rows[len(rows)-2], rows[len(rows)-1]
				ma, mz := a.Measurements[n], z.Measurements[n]
				if ma != nil && mz != nil {
					g = fmt.Sprintf("%s, %s, %s", exponent(ma.Wall, mz.Wall, a.Nodes, z.Nodes), exponent(ma.Requests, mz.Requests, a.Nodes, z.Nodes), exponent(ma.Bytes, mz.Bytes, a.Nodes, z.Nodes))
				}
			}
			fmt.Printf(" %s |\n", g)
		}
	}
	return nil
}

func exponent(y1, y2 float64, n1, n2 int) string {
	if y1 <= 0 || y2 <= 0 || n1 == n2 {
		return "-"
	}
	return fmt.Sprintf("%.2f", math.Log(y2/y1)/math.Log(float64(n2)/float64(n1)))
}
