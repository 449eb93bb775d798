// Package agentproto is the one place that knows how kubeslow talks to its agents: the command line of each
// agent request (the container args of an agent pod, or the argv of an exec in one) and the decoding of what
// the agent prints. The measurements build requests here and never write an agent flag or parse agent output
// themselves; the agent's commands (internal/cli/agent, internal/cli/probe, internal/cli/bench) declare their
// flags with the names below, and a test parses every request through the real command tree.
package agentproto

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Binary is the kubeslow binary's path in the agent image (its entrypoint).
const Binary = "/kubeslow"

// Flag names shared by the agent's commands and the requests below.
const (
	FlagListen     = "listen"
	FlagTCPListen  = "tcp-listen"
	FlagInterval   = "interval"
	FlagWait       = "wait"
	FlagTimeout    = "timeout"
	FlagDuration   = "duration"
	FlagConc       = "concurrency"
	FlagEach       = "each"
	FlagNewConn    = "new-conn"
	FlagOutput     = "output"
	FlagProcfs     = "path.procfs"
	FlagSysfs      = "path.sysfs"
	FlagRootfs     = "path.rootfs"
	FlagKubeProxy  = "kube-proxy-metrics"
	FlagNetProcfs  = "path.netprocfs"
	FlagNetSysfs   = "path.netsysfs"
	FlagKubeletDir = "kubelet-dir"
	FlagRuntimeDir = "runtime-dir"
	FlagProbeSize  = "probe-bytes"
	FlagWindow     = "window"
	FlagNodeName   = "node-name"
	FlagReadyFile  = "ready-file"
	FlagEvery      = "every"
	FlagDNS        = "dns"
	FlagConnect    = "connect"
	FlagBackBase   = "backoff-base"
	FlagBackFactor = "backoff-factor"
	FlagBackCap    = "backoff-cap"
	FlagRoot       = "root"
	FlagDir        = "dir"
	FlagPath       = "path"
	FlagSize       = "size"
	FlagBlockSize  = "block-size"
	FlagThreads    = "threads"
	FlagMemory     = "memory"
	// The control-plane tier's flags.
	FlagCgroupfs    = "path.cgroupfs"
	FlagManifestDir = "manifest-dir"
	FlagComponent   = "component"
	FlagMaxBytes    = "max-bytes"
	FlagTokenFile   = "token-file"
	FlagFile        = "file"
	FlagInode       = "inode"
	FlagOffset      = "offset"
)

// Request is one agent command: Args are its arguments after the binary (what an agent pod's container
// args hold, the image's entrypoint being the binary).
type Request interface{ Args() []string }

// Argv is the full command line of r for an exec in an agent pod.
func Argv(r Request) []string { return append([]string{Binary}, r.Args()...) }

// Call is a Request whose output decodes to a T.
type Call[T any] interface {
	Request
	Decode(out []byte) (T, error)
}

// Reread marks the read-only requests (they change nothing on the node) that Exec runs again when an exec
// ends with no output and no error.
type Reread interface{ Reread() }

// execFn runs a command in a pod (kube.Exec; a test replaces it).
var execFn = kube.Exec

// execAttempts bounds Exec's runs of a Reread request that came back empty.
const execAttempts = 3

// Exec runs r in the agent pod ns/pod (through the apiserver, as kubectl exec) and decodes its output.
//
// Every agent command writes a report, so an exec that ends with no error and no output lost it: the
// exec stream can close before stdout is delivered, and an error stream closed with nothing on it reads
// as success (kubernetes/kubernetes#137404; seen on the lab with the apiserver held to 0.1 cores). A
// read-only request (Reread) is then run again, up to execAttempts times; any other is an error saying so.
func Exec[T any](ctx context.Context, cfg *rest.Config, c kubernetes.Interface, ns, pod string, r Call[T]) (T, error) {
	var zero T
	var out, errOut string
	var err error
	for attempt := 1; ; attempt++ {
		out, errOut, err = execFn(ctx, cfg, c, ns, pod, Argv(r)...)
		if err != nil {
			return zero, fmt.Errorf("exec in %s: %v: %s", pod, err, strings.TrimSpace(errOut))
		}
		if strings.TrimSpace(out) != "" {
			break
		}
		_, again := r.(Reread)
		if !again || attempt >= execAttempts || ctx.Err() != nil {
			return zero, fmt.Errorf("exec in %s: %s ended with no output after %d attempt(s): the exec stream closed before the agent's report arrived (kubernetes/kubernetes#137404)%s",
				pod, strings.Join(r.Args()[:min(2, len(r.Args()))], " "), attempt, stderrNote(errOut))
		}
	}
	v, err := r.Decode([]byte(out))
	if err != nil {
		return v, fmt.Errorf("%s: %w", pod, err)
	}
	return v, nil
}

func stderrNote(s string) string {
	if s = strings.TrimSpace(s); s != "" {
		return "; stderr: " + s
	}
	return ""
}

// Pause keeps an agent pod alive doing nothing (the client side of exec-driven benchmarks).
type Pause struct{}

// Args implements Request.
func (Pause) Args() []string { return []string{"pause"} }

// Serve is `agent serve`: the HTTP server and, with TCPListen, the TCP test server.
type Serve struct{ Listen, TCPListen string }

// Args implements Request.
func (s Serve) Args() []string {
	a := []string{"agent", "serve", "--" + FlagListen, s.Listen}
	if s.TCPListen != "" {
		a = append(a, "--"+FlagTCPListen, s.TCPListen)
	}
	return a
}

// Burn is `agent burn`: the lab's CPU and memory workloads (Threads spinning, Memory bytes held, HTTP 200 on
// Listen when set), until stopped.
type Burn struct {
	Threads int
	Memory  int64
	Listen  string
}

// Args implements Request.
func (b Burn) Args() []string {
	a := []string{"agent", "burn", "--" + FlagThreads, strconv.Itoa(b.Threads), "--" + FlagMemory, strconv.FormatInt(b.Memory, 10)}
	if b.Listen != "" {
		a = append(a, "--"+FlagListen, b.Listen)
	}
	return a
}

// ProbeNode is `probe node`: the namespace's network facts (agent.NodeNet).
type ProbeNode struct{}

// Args implements Request.
func (ProbeNode) Args() []string { return []string{"probe", "node"} }

// Reread implements Reread: it only reads.
func (ProbeNode) Reread() {}

// Decode reads the probe's output.
func (ProbeNode) Decode(out []byte) (*agent.NodeNet, error) {
	var nn agent.NodeNet
	if err := json.Unmarshal(out, &nn); err != nil {
		return nil, fmt.Errorf("probe node output: %w", err)
	}
	return &nn, nil
}

// DFPing is `probe df-ping`: DF-set ICMP echoes to Target (agent.DFPing).
type DFPing struct {
	Target  string
	Timeout time.Duration
}

// Args implements Request.
func (d DFPing) Args() []string {
	a := []string{"probe", "df-ping"}
	if d.Timeout > 0 {
		a = append(a, "--"+FlagTimeout, d.Timeout.String())
	}
	return append(a, d.Target)
}

// Decode reads the probe's output.
func (DFPing) Decode(out []byte) (*agent.DFPing, error) {
	var p agent.DFPing
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, fmt.Errorf("probe df-ping output: %w", err)
	}
	return &p, nil
}

// DNSWait is `probe dns-wait`: resolve every name until it resolves or Wait ends. The command writes one
// line to stderr once it has asked for every name (AskedLine).
type DNSWait struct {
	Interval, Wait, Timeout time.Duration
	Names                   []string
}

// AskedLine is what dns-wait prints on stderr once every name has been asked for.
const AskedLine = "asked"

// Args implements Request.
func (d DNSWait) Args() []string {
	a := []string{"probe", "dns-wait", "--" + FlagInterval, d.Interval.String(), "--" + FlagWait, d.Wait.String()}
	if d.Timeout > 0 {
		a = append(a, "--"+FlagTimeout, d.Timeout.String())
	}
	return append(a, d.Names...)
}

// Decode reads the command's output.
func (DNSWait) Decode(out []byte) ([]agent.DNSWait, error) {
	var ws []agent.DNSWait
	if err := json.Unmarshal(out, &ws); err != nil {
		return nil, fmt.Errorf("dns-wait output: %w", err)
	}
	return ws, nil
}

// DNSLookups is `probe dns-lookups`: start a lookup of the names in turn with the pod's resolver every
// Interval (open loop) for Duration, at most Concurrency in flight; each lookup bounded by Timeout (past the
// resolver's own retries). It prints agent.DNSLookups (JSON); with Each, every lookup first, one
// agent.LookupSample line each as it returns (a pod's log then shows the lookups as they happen; Decode reads
// the output without Each).
type DNSLookups struct {
	Duration, Interval, Timeout time.Duration
	Concurrency                 int
	Each                        bool
	Names                       []string
}

// Args implements Request.
func (d DNSLookups) Args() []string {
	a := []string{"probe", "dns-lookups", "--" + FlagDuration, d.Duration.String(), "--" + FlagInterval, d.Interval.String(),
		"--" + FlagTimeout, d.Timeout.String(), "--" + FlagConc, strconv.Itoa(d.Concurrency)}
	if d.Each {
		a = append(a, "--"+FlagEach)
	}
	return append(a, d.Names...)
}

// Decode reads the command's output (without Each).
func (DNSLookups) Decode(out []byte) (agent.DNSLookups, error) {
	var l agent.DNSLookups
	if err := json.Unmarshal(out, &l); err != nil {
		return l, fmt.Errorf("dns-lookups output: %w", err)
	}
	return l, nil
}

// JobPeer is `agent job-peer`: one member of a job whose members find each other by per-pod DNS name. It
// listens on Listen, polls every name (its own skipped) every Interval and, with Connect, connects to each
// peer at the listen port with exponential back-off; it prints one JSON line (agent.JobPeer) when done and
// keeps accepting peers until Wait ends.
type JobPeer struct {
	Listen                  string
	Interval, Wait, Timeout time.Duration
	Connect                 bool
	BackoffBase, BackoffCap time.Duration
	BackoffFactor           float64
	Names                   []string
}

// Args implements Request.
func (j JobPeer) Args() []string {
	a := []string{"agent", "job-peer", "--" + FlagListen, j.Listen, "--" + FlagInterval, j.Interval.String(), "--" + FlagWait, j.Wait.String(),
		"--" + FlagTimeout, j.Timeout.String()}
	if j.Connect {
		a = append(a, "--"+FlagConnect, "--"+FlagBackBase, j.BackoffBase.String(), "--"+FlagBackFactor, strconv.FormatFloat(j.BackoffFactor, 'g', -1, 64),
			"--"+FlagBackCap, j.BackoffCap.String())
	}
	return append(a, j.Names...)
}

// Decode reads the member's report from its log: the last line that is a JSON object.
func (JobPeer) Decode(out []byte) (agent.JobPeer, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) == 0 || l[0] != '{' {
			continue
		}
		var p agent.JobPeer
		if err := json.Unmarshal(l, &p); err != nil {
			return p, fmt.Errorf("job-peer report: %w", err)
		}
		return p, nil
	}
	return agent.JobPeer{}, fmt.Errorf("job-peer: no report in %d bytes of output", len(out))
}

// NodeHost is `agent node`: the node agent's report (agent.NodeHost, one JSON line). In the DaemonSet the
// host's /proc, /sys and / are mounted under HostRoot, the node's network namespace is the pod's own (host
// network), and with ReadyFile the agent stays up after its report (its readiness probe is Ready()).
type NodeHost struct {
	// HostRoot is where the host's /proc, /sys and /dev/kmsg are mounted ("" reads the agent's own: a
	// process on the host).
	HostRoot string
	// KubeletDir and RuntimeDir are directories on the kubelet's and the runtime's disks ("": skip).
	KubeletDir, RuntimeDir string
	ProbeBytes             int64
	Window                 time.Duration
	ReadyFile              string
	// Every, when set, keeps the agent running: a read (of Window) every Every, one report line each, the
	// ready file after the first (the node agent DaemonSet `kubeslow watch install --node-agent` keeps).
	Every time.Duration
}

// Args implements Request.
func (n NodeHost) Args() []string {
	a := []string{"agent", "node", "--" + FlagProbeSize, strconv.FormatInt(n.ProbeBytes, 10), "--" + FlagWindow, n.Window.String()}
	if n.HostRoot != "" {
		a = append(a, "--"+FlagProcfs, n.HostRoot+"/proc", "--"+FlagSysfs, n.HostRoot+"/sys", "--"+FlagRootfs, n.HostRoot)
	}
	for _, kv := range [][2]string{{FlagKubeletDir, n.KubeletDir}, {FlagRuntimeDir, n.RuntimeDir}, {FlagReadyFile, n.ReadyFile}} {
		if kv[1] != "" {
			a = append(a, "--"+kv[0], kv[1])
		}
	}
	if n.Every > 0 {
		a = append(a, "--"+FlagEvery, n.Every.String())
	}
	return a
}

// Ready is the exec readiness probe's command: the report has been written.
func (n NodeHost) Ready() []string { return Argv(exists{n.ReadyFile}) }

type exists struct{ path string }

func (e exists) Args() []string { return []string{"agent", "exists", e.path} }

// Reread implements Reread: it only reads.
func (NodeHost) Reread() {}

// Decode reads the report: the first line of the agent's output or log that opens a JSON object (the
// agent's stderr shares its log).
func (NodeHost) Decode(out []byte) (*agent.NodeHost, error) { return decodeNodeHost(out, false) }

// DecodeLast reads the newest report of an agent kept running (Every): the last line of its log that opens a
// JSON object.
func (NodeHost) DecodeLast(out []byte) (*agent.NodeHost, error) { return decodeNodeHost(out, true) }

func decodeNodeHost(out []byte, last bool) (*agent.NodeHost, error) {
	var line []byte
	for l := range bytes.Lines(out) {
		if l = bytes.TrimSpace(l); len(l) > 0 && l[0] == '{' {
			line = l
			if !last {
				break
			}
		}
	}
	var h agent.NodeHost
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, fmt.Errorf("node agent report: %w", err)
	}
	if h.Net == nil {
		return nil, fmt.Errorf("node agent report: no network section (not a node report?)")
	}
	return &h, nil
}

// BenchHTTP is `bench http` run by an agent (closed loop) with a JSON report.
type BenchHTTP struct {
	URL         string
	Concurrency int
	Duration    time.Duration
	NewConn     bool
}

// Args implements Request.
func (b BenchHTTP) Args() []string {
	a := []string{"bench", "http", b.URL, "--" + FlagConc, strconv.Itoa(b.Concurrency), "--" + FlagDuration, b.Duration.String(), "--" + FlagOutput, "json"}
	if b.NewConn {
		a = append(a, "--"+FlagNewConn)
	}
	return a
}

// Decode reads the benchmark's one result.
func (BenchHTTP) Decode(out []byte) (*result.Result, error) { return decodeOne(out) }

// BenchTCP is `bench tcp` (stream and request/response) run by an agent, with a JSON report.
type BenchTCP struct {
	Addr     string
	Duration time.Duration
}

// Args implements Request.
func (b BenchTCP) Args() []string {
	return []string{"bench", "tcp", b.Addr, "--" + FlagDuration, b.Duration.String(), "--" + FlagOutput, "json"}
}

// Decode reads the benchmark's one result.
func (BenchTCP) Decode(out []byte) (*result.Result, error) { return decodeOne(out) }

// decodeOne reads a report holding one result, from the command's stdout or from its pod's log (see
// reportLines); a result with status Error is returned as an error.
func decodeOne(out []byte) (*result.Result, error) {
	rep, err := result.Decode(bytes.NewReader(reportLines(out)))
	if err != nil {
		return nil, fmt.Errorf("agent report: %w", err)
	}
	if len(rep.Results) != 1 {
		return nil, fmt.Errorf("agent report: %d results, want 1", len(rep.Results))
	}
	if rep.Results[0].Status == result.StatusError {
		return nil, fmt.Errorf("agent: %s", rep.Results[0].Reason)
	}
	return &rep.Results[0], nil
}

// DiskSample is `agent disk-sample`: every Interval for Duration, one JSON line (diskprobe.Sample) about Dir's
// disk as the host under Root sees it: a write+fdatasync's latency, /proc/diskstats rates, PSI io and the
// D-state tasks.
type DiskSample struct {
	Root, Dir          string
	Interval, Duration time.Duration
	ProbeBytes         int
}

// Args implements Request.
func (d DiskSample) Args() []string {
	a := []string{"agent", "disk-sample", "--" + FlagRoot, d.Root, "--" + FlagDir, d.Dir, "--" + FlagInterval, d.Interval.String(),
		"--" + FlagDuration, d.Duration.String()}
	if d.ProbeBytes != 0 {
		a = append(a, "--"+FlagProbeSize, strconv.Itoa(d.ProbeBytes))
	}
	return a
}

// DecodeLine reads one line of the sampler's output; ok is false for a line that is no sample (the command's
// progress on stderr shares a container's log with its samples). A probe time of -1 (not probed) is NaN.
func (DiskSample) DecodeLine(line []byte) (s diskprobe.Sample, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return s, false
	}
	if err := json.Unmarshal(line, &s); err != nil || s.T.IsZero() {
		return diskprobe.Sample{}, false
	}
	if s.SyncSeconds < 0 {
		s.SyncSeconds = math.NaN()
	}
	return s, true
}

// BenchDisk is `bench disk` (etcd's fio recipe) run by an agent on the directory Path, with a JSON report.
type BenchDisk struct {
	Path      string
	Size      int64
	BlockSize int
}

// Args implements Request.
func (b BenchDisk) Args() []string {
	return []string{"bench", "disk", "--" + FlagPath, b.Path, "--" + FlagSize, strconv.FormatInt(b.Size, 10),
		"--" + FlagBlockSize, strconv.Itoa(b.BlockSize), "--" + FlagOutput, "json"}
}

// Decode reads the benchmark's one result from its pod's log, where the command's stderr shares the log
// with the report (decodeOne keeps the report's lines).
func (BenchDisk) Decode(out []byte) (*result.Result, error) { return decodeOne(out) }

// reportLines keeps, of a container's log, the lines of the indented JSON report its command wrote on
// stdout. The runtime logs stdout and stderr line by line as each stream is read, so the command's
// progress and summary lines on stderr come before the report, after it, or between two of its lines
// (the summary is written as the report is still being read). The report starts at the first line that
// opens a JSON object, and its lines are those that open or close the object or are indented; a stderr
// line is neither. Output captured from stdout alone comes back unchanged.
func reportLines(out []byte) []byte {
	var keep []byte
	started := false
	for line := range bytes.Lines(out) {
		switch {
		case len(line) == 0:
		case line[0] == '{':
			started = true
			keep = append(keep, line...)
		case started && (line[0] == '}' || line[0] == ' ' || line[0] == '\t'):
			keep = append(keep, line...)
		}
	}
	return keep
}

// BenchDNSLoad is `bench dns-load` run by an agent against each server in turn (a ramp), with a JSON report.
type BenchDNSLoad struct {
	Servers []string
	// Names are KIND=NAME.
	Names   []string
	Start   float64
	Factor  float64
	Steps   int
	Step    time.Duration
	Timeout time.Duration
	P99Max  time.Duration
	FailMax float64
}

// Args implements Request.
func (b BenchDNSLoad) Args() []string {
	a := append([]string{"bench", "dns-load"}, b.Servers...)
	for _, n := range b.Names {
		a = append(a, "--name", n)
	}
	return append(a, "--start", strconv.FormatFloat(b.Start, 'g', -1, 64), "--factor", strconv.FormatFloat(b.Factor, 'g', -1, 64),
		"--steps", strconv.Itoa(b.Steps), "--step", b.Step.String(), "--"+FlagTimeout, b.Timeout.String(), "--p99-max", b.P99Max.String(),
		"--fail-max", strconv.FormatFloat(b.FailMax, 'g', -1, 64), "--"+FlagOutput, "json")
}

// Decode reads the benchmark's one result.
func (BenchDNSLoad) Decode(out []byte) (*result.Result, error) { return decodeOne(out) }

// CPRoots are where an agent pod reaches the host for the control-plane tier: a procfs of the host's PID
// namespace and the host's cgroup root ("" each: the agent's own /proc and /sys/fs/cgroup).
type CPRoots struct{ Proc, Cgroup string }

func (r CPRoots) args() []string {
	var a []string
	if r.Proc != "" {
		a = append(a, "--"+FlagProcfs, r.Proc)
	}
	if r.Cgroup != "" {
		a = append(a, "--"+FlagCgroupfs, r.Cgroup)
	}
	return a
}

// ControlPlane is `agent control-plane`: the control-plane components in the node's network namespace with
// their CPU sampled Interval apart (agent.ControlPlane, one JSON line).
type ControlPlane struct {
	Roots    CPRoots
	Interval time.Duration
}

// Args implements Request.
func (c ControlPlane) Args() []string {
	return append(append([]string{"agent", "control-plane"}, c.Roots.args()...), "--"+FlagInterval, c.Interval.String())
}

// Reread implements Reread: it only reads.
func (ControlPlane) Reread() {}

// Decode reads the report.
func (ControlPlane) Decode(out []byte) (*agent.ControlPlane, error) {
	var cp agent.ControlPlane
	if err := json.Unmarshal(bytes.TrimSpace(out), &cp); err != nil {
		return nil, fmt.Errorf("control-plane report: %w", err)
	}
	if cp.NetNS == "" {
		return nil, fmt.Errorf("control-plane report: no network namespace (not a control-plane report?)")
	}
	return &cp, nil
}

// Scraped is a control-plane component's /metrics as its node's agent fetched it.
type Scraped struct {
	agent.ScrapeHeader
	Body []byte
}

// CPScrape is `agent cp-scrape`: one component's /metrics from its node, at most MaxBytes.
type CPScrape struct {
	Roots     CPRoots
	Component string
	MaxBytes  int64
	Timeout   time.Duration
}

// Args implements Request.
func (c CPScrape) Args() []string {
	return append(append([]string{"agent", "cp-scrape"}, c.Roots.args()...), "--"+FlagComponent, c.Component,
		"--"+FlagMaxBytes, strconv.FormatInt(c.MaxBytes, 10), "--"+FlagTimeout, c.Timeout.String())
}

// Reread implements Reread: it only reads.
func (CPScrape) Reread() {}

// Decode reads the header line and the body after it.
func (c CPScrape) Decode(out []byte) (Scraped, error) {
	var s Scraped
	body, err := headerBody(out, &s.ScrapeHeader, c.MaxBytes)
	if err != nil {
		return s, fmt.Errorf("cp-scrape: %w", err)
	}
	if s.Bytes != len(body) {
		return s, fmt.Errorf("cp-scrape: header says %d bytes, %d came", s.Bytes, len(body))
	}
	s.Body = body
	return s, nil
}

// AuditChunk is a piece of the apiserver's audit log as its node's agent read it: whole lines.
type AuditChunk struct {
	agent.AuditHeader
	Data []byte
}

// CPAudit is `agent cp-audit`: at most MaxBytes of the audit log from Cursor (MaxBytes 0: only the cursor
// at the log's end).
type CPAudit struct {
	Roots    CPRoots
	Cursor   agent.AuditCursor
	MaxBytes int64
}

// Args implements Request.
func (c CPAudit) Args() []string {
	a := append([]string{"agent", "cp-audit"}, c.Roots.args()...)
	if c.Cursor.File != "" {
		a = append(a, "--"+FlagFile, c.Cursor.File)
	}
	return append(a, "--"+FlagInode, strconv.FormatUint(c.Cursor.Inode, 10), "--"+FlagOffset, strconv.FormatInt(c.Cursor.Offset, 10),
		"--"+FlagMaxBytes, strconv.FormatInt(c.MaxBytes, 10))
}

// Reread implements Reread: it only reads.
func (CPAudit) Reread() {}

// Decode reads the header line and the chunk after it.
func (c CPAudit) Decode(out []byte) (AuditChunk, error) {
	var a AuditChunk
	data, err := headerBody(out, &a.AuditHeader, c.MaxBytes)
	if err != nil {
		return a, fmt.Errorf("cp-audit: %w", err)
	}
	if a.Bytes != len(data) {
		return a, fmt.Errorf("cp-audit: header says %d bytes, %d came", a.Bytes, len(data))
	}
	a.Data = data
	return a, nil
}

// headerBody splits an agent's output into its first line (JSON, into h) and the bytes after it, which
// may be at most limit.
func headerBody(out []byte, h any, limit int64) ([]byte, error) {
	line, body, ok := bytes.Cut(out, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("no header line in %d bytes", len(out))
	}
	if err := json.Unmarshal(line, h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%d bytes after the header, more than the %d asked for", len(body), limit)
	}
	return body, nil
}
