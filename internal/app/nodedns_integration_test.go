package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// hostServer is where unansweredLoopbackQueries sends: a loopback address of the machine's own network
// namespace on which nothing listens (the kernel answers with a port unreachable, which a UDP socket that
// only sends ignores; to the tracer the queries are never answered).
const hostServer = "127.0.53.1:53"

// unansweredLoopbackQueries sends a DNS query for a name to server every interval from one socket of this
// process until ctx ends, and returns how many it sent.
func unansweredLoopbackQueries(ctx context.Context, t *testing.T, server string, interval time.Duration) int {
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Errorf("a socket for the host's queries: %v", err)
		return 0
	}
	defer conn.Close()
	to, err := net.ResolveUDPAddr("udp4", server)
	if err != nil {
		t.Errorf("%s: %v", server, err)
		return 0
	}
	sent := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for id := uint16(1); ; id++ {
		m := new(dns.Msg)
		m.SetQuestion("host-loopback.kubeslow.test.", dns.TypeA)
		m.Id = id
		b, err := m.Pack()
		if err == nil {
			_, err = conn.WriteTo(b, to)
		}
		if err != nil {
			t.Errorf("a query to %s: %v", server, err)
			return sent
		}
		sent++
		select {
		case <-ctx.Done():
			return sent
		case <-tick.C:
		}
	}
}

// leftOut reads how many clients a node's dns_shared_kernel label left out.
var leftOut = regexp.MustCompile(`: (\d+) clients seen here left out`)

// assertHostLoopbackLeftOut: no node reports the machine's own loopback queries to hostServer (sent of them
// while the agents watched) as a client of its own, and the nodes' records count them as left out; unless an
// agent says it cannot tell network namespaces apart (then the queries are its host network's, as before).
func assertHostLoopbackLeftOut(t *testing.T, na *result.Result, sent int) {
	t.Helper()
	for _, rec := range na.Records {
		if strings.Contains(rec.Labels["dns"], nodeagent.NoNetnsNote) {
			t.Logf("%s: %s; the host's loopback queries are not checked", rec.ID, nodeagent.NoNetnsNote)
			return
		}
		if m := leftOut.FindStringSubmatch(rec.Labels["dns_shared_kernel"]); m == nil || m[1] == "0" {
			t.Errorf("%s: dns_shared_kernel %q: want the host's loopback client counted as left out", rec.ID, rec.Labels["dns_shared_kernel"])
		}
	}
	if sent < 20 {
		t.Errorf("only %d queries sent to %s while the agents watched", sent, hostServer)
	}
	for _, m := range na.Metrics {
		if m.Labels["server"] == hostServer {
			t.Errorf("the host's queries to %s (%d sent) reported as %s's: %s %v = %v", hostServer, sent, m.Labels["node"], m.Name, m.Labels, m.Value)
		}
	}
}

// TestIntegrationNodeDNS runs the node agent's eBPF DNS tracer (nodes.agent, docs/nodes.md) on the lab's real
// nodes against a pod kubeslow did not create: the pod, pinned to lab-node-1, looks one fully-qualified name
// up every 50 ms with its own resolver (`probe dns-lookups --each`: one A and one AAAA query per lookup, no
// search domain, through the pod's resolv.conf to the lab's CoreDNS Service) and logs every lookup with its
// start; both clocks are the machine's.
//   - healthy (a 6 s watch, while the machine itself sends queries that are never answered to a loopback
//     address, as a test beside the lab's may: no node's): the pod's dns_queries_per_second (source ebpf, named by namespace and pod) is its
//     real rate over the watch — two queries per lookup the pod logged, within the count of the watch's edges —
//     half of them NODATA (the AAAA of an IPv4 Service), a latency p99, no time-out, KS-POD-DNS-TIMEOUT clear;
//     the same watch is the connect tracer's plain path (connects); the machine's loopback client is neither
//     node's (left out on both, no metric of its server);
//   - timeouts (`kubeslow run --only nodes.agent --window 8s`: the agents watch the run's window): a firewall rule in lab-node-1's network namespace drops UDP to port 53 from that
//     pod's address only (FORWARD: the pod's packets are routed through the node); KS-POD-DNS-TIMEOUT names
//     that pod, and no other; the rule's counters show the drops. The same run is the connect tracer's first
//     fault (first-syn-dropped, connects);
//   - coredns-paused (the same kind of run): the lab's CoreDNS stopped; KS-POD-DNS-TIMEOUT names the pod among
//     the Service's clients, and no client of another server. The same run is the connect tracer's second
//     fault (syn-rate-limited, connects).
//
// Each fault run holds one DNS fault and one connect fault on paths that share nothing (the pod's UDP to port 53,
// and lab-node-1's host network's TCP to a server pod on lab-node-2, reached by its address: curl resolves no
// name), and each fault's assertions are on its own client's series and findings (KS-POD-DNS-TIMEOUT's items
// are all DNS clients, KS-POD-CONNECT-SLOW's are only required to hold curl's): until 2026-11-29 a run per
// fault, four. Shared, on the lab three times: 134-140 of the pod's queries timed out under the drop and 276-284
// with CoreDNS stopped (the rule's least is 2, and all of them: share 1.00), curl connected 11 times through the
// first-SYN drop (5 needed), 7-8 of them slow in the agent's watch (the rule's 2), 20-23 of 26 under the SYN limit.
func TestIntegrationNodeDNS(t *testing.T) {
	d, rc := labtest.Shared(t, appLab(t))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := kubernetes.NewForConfigOrDie(rc)
	const ns, podName = "nodedns-it", "resolver"
	const interval = 50 * time.Millisecond
	node := lab.RealNodeName(1)
	server := lab.ClusterDNSIP + ":53"

	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, c, ns) })
	// The loop: open (a lookup every 50 ms whether or not the last returned), each lookup bounded by 12 s (two
	// of the resolver's 5 s tries), for at most 5 minutes (the test needs about one).
	loop := agentproto.DNSLookups{Duration: 5 * time.Minute, Interval: interval, Timeout: 12 * time.Second, Concurrency: 512, Each: true,
		Names: []string{"kubernetes.default.svc.cluster.local."}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node}, RestartPolicy: corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1), AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "lookups", Image: lab.AgentImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: agentproto.Argv(loop)}}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logPod(t, c, ns, podName)
		}
	})
	// The connect tracer's peer (connects) starts beside the pod (until 2026-11-29 after it).
	createConnectServer(ctx, t, c, ns)
	podIP := labtest.WaitPodRunning(ctx, t, c, ns, podName).Status.PodIP
	if podIP == "" {
		t.Fatal("the pod runs without an IP")
	}
	labtest.Eventually(ctx, t, "the pod's first lookup", func() error {
		s, err := podLookups(ctx, c, ns, podName)
		if err == nil && !slices.ContainsFunc(s, func(x agent.LookupSample) bool { return x.Error == "" }) {
			err = fmt.Errorf("%d lookups logged, none resolved", len(s))
		}
		return err
	})
	podLabels := map[string]string{"node": node, "namespace": ns, "pod": podName, "kind": nodeagent.DNSClientPod, "server": server, "source": "ebpf"}

	// sweep runs nodes.agent alone with the agent watching for window, and returns its report and result with
	// the time it ran (the agent's watch is inside it): through the runner, or with viaRun as a user would,
	// `kubeslow run --only nodes.agent --window W` (the agents watch the run's observation window).
	sweep := func(t *testing.T, window time.Duration, viaRun bool) (*result.Report, *result.Result, time.Time, time.Time) {
		t.Helper()
		began := time.Now()
		var rep *result.Report
		if viaRun {
			code, out, errOut := runArgs(t, "run", "--kubeconfig", d.AdminKubeconfig(), "--agent-image", lab.AgentImage,
				"--only", nodeagent.Name, "--window", window.String(), "--out-dir", "", "-o", "json")
			if code != 0 && code != 1 { // 1: findings
				t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
			}
			rep = &result.Report{}
			if err := json.Unmarshal([]byte(out), rep); err != nil {
				t.Fatalf("json: %v\n%s\n%s", err, out, errOut)
			}
		} else {
			opts := nodeagent.DefaultOptions(lab.AgentImage)
			opts.Window = window
			var err error
			rep, err = runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: rest.CopyConfig(rc), Name: "lab-kubeconfig"},
				Measurements: []measure.Measurement{nodeagent.New(opts)}, Rules: check.Rules(), Progress: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
		}
		ended := time.Now()
		t.Logf("nodes.agent with a %s watch took %s (through run: %v)", window, ended.Sub(began).Round(100*time.Millisecond), viaRun)
		na := find(*rep, nodeagent.Name)
		if na == nil || na.Status != result.StatusPass || metric(na, nodeagent.MetricNodesReported, nil) != 2 {
			t.Fatalf("%s: %+v", nodeagent.Name, na)
		}
		for _, rec := range na.Records {
			t.Logf("%s: dns %q %q; unread %q", rec.ID, rec.Labels["dns"], rec.Labels["dns_shared_kernel"], rec.Labels["unread"])
			// The tracer must run in the agent's pod on both real nodes: its unread entry says why not.
			if rec.Labels["dns"] == "" || strings.Contains(rec.Labels["unread"], agent.DNSUnread) {
				t.Errorf("%s: the DNS tracer did not run: %s", rec.ID, rec.Labels["unread"])
			}
		}
		for _, m := range na.Metrics {
			if !strings.HasPrefix(m.Name, "dns_") {
				continue
			}
			t.Logf("  %s{%s %s/%s %s kind=%s server=%s} = %.4g", m.Name, m.Labels["node"], m.Labels["namespace"], m.Labels["pod"], m.Labels["client"], m.Labels["kind"], m.Labels["server"], m.Value)
			// The lab's two real nodes share the machine's kernel, so lab-node-2's tracer sees the pod's sockets
			// too: they are reported under the pod's node only.
			if m.Labels["client"] == podIP && m.Labels["node"] != node {
				t.Errorf("the pod's queries reported under %s too: %+v", m.Labels["node"], m)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		return rep, na, began, ended
	}

	// The connect tracer's peer (connects): its server pod on lab-node-2, up before the healthy sweep, which
	// watches both tracers at once.
	cn := newConnects(ctx, t, c, ns, sweep)

	t.Run("healthy", func(t *testing.T) {
		// One sweep of the healthy lab for both tracers: the pod's lookups, and curl's connects on the plain path
		// from lab-node-1's host network (until 2026-11-29 a sweep each, the same 6 s window through the runner).
		const window = 6 * time.Second
		// Beside it, the machine itself (this test's process, in no node's network namespace, as CI's lab-free
		// tests run beside the lab's) sends DNS queries that are never answered to a loopback address, every
		// 100 ms: the real nodes' tracers see them (one kernel), and neither node's host network made them
		// (CI of 4727b56: a test's 127.0.0.1:53 time-outs were reported as lab-node-1's, KS-POD-DNS-TIMEOUT).
		hostCtx, stopHost := context.WithCancel(ctx)
		hostSent := make(chan int, 1)
		go func() { hostSent <- unansweredLoopbackQueries(hostCtx, t, hostServer, 100*time.Millisecond) }()
		curl, rep, na, began, ended := cn.measure(t, window, 1, false)
		stopHost()
		sent := <-hostSent
		cn.plain(t, curl, rep, na)
		assertHostLoopbackLeftOut(t, na, sent)
		queries, perSecond := metric(na, nodeagent.MetricDNSQueries, podLabels), metric(na, nodeagent.MetricDNSQueriesPerSecond, podLabels)
		if queries <= 0 || perSecond <= 0 {
			t.Fatalf("pod %s/%s (%s): %v queries, %v per second: not seen", ns, podName, podIP, queries, perSecond)
		}
		// The tracer's watch: its count over its rate; the agent's whole read, inside the run.
		watch := time.Duration(queries / perSecond * float64(time.Second))
		if watch < window || watch > ended.Sub(began) {
			t.Errorf("the tracer's watch %s: want from the agent's window %s to the run's %s", watch, window, ended.Sub(began))
		}
		// The truth: the lookups the pod logged as started while the run lasted (each sends A and AAAA). The
		// watch is some stretch of that length inside the run: its count of lookups lies between the fewest and
		// the most started in any stretch of the watch's length, and a lookup in flight at either edge of the
		// watch may count or not (a lookup's queries leave and return within milliseconds of its start, a
		// fraction of the 50 ms between lookups): ±2 lookups.
		samples, err := podLookups(ctx, c, ns, podName)
		if err != nil {
			t.Fatal(err)
		}
		starts := lookupStarts(samples, began, ended)
		lo, hi := countRange(starts, began, ended, watch)
		truth := 2 * float64(len(starts)) / ended.Sub(began).Seconds()
		low, high := 2*float64(lo-2)/watch.Seconds(), 2*float64(hi+2)/watch.Seconds()
		t.Logf("the pod's loop: %d lookups started in the run's %.1f s (%.2f queries/s: A and AAAA); %d..%d in any %.2f s stretch (%.1f..%.1f queries/s with the edges); eBPF: %.0f queries over %.2f s = %.2f/s (%.1f%% of the real rate)",
			len(starts), ended.Sub(began).Seconds(), truth, lo, hi, watch.Seconds(), low, high, queries, watch.Seconds(), perSecond, 100*(perSecond/truth-1))
		if perSecond < low || perSecond > high {
			t.Errorf("dns_queries_per_second %.2f, want within %.2f..%.2f (the pod's real rate over the watch)", perSecond, low, high)
		}
		// Every lookup's AAAA of the IPv4-only Service is answered NOERROR with no record: half the queries.
		if nx := metric(na, nodeagent.MetricDNSNXDomain, podLabels); nx != 0 {
			t.Errorf("dns_nxdomain %v for a name that exists", nx)
		}
		if nodata := metric(na, nodeagent.MetricDNSNoData, podLabels); nodata < queries/2-2 || nodata > queries/2+2 {
			t.Errorf("dns_nodata %v of %v queries: want the AAAA half", nodata, queries)
		}
		p50, p99 := metric(na, nodeagent.MetricDNSLatencyP50, podLabels), metric(na, nodeagent.MetricDNSLatencyP99, podLabels)
		t.Logf("latency p50 %.3f ms, p99 %.3f ms", 1000*p50, 1000*p99)
		if p50 <= 0 || p99 < p50 || p99 >= 1 {
			t.Errorf("latency p50 %v s, p99 %v s: want answers within the second", p50, p99)
		}
		if to := metric(na, nodeagent.MetricDNSTimeouts, podLabels); to != 0 {
			t.Errorf("dns_timeouts %v on a healthy lab (absent: -1)", to)
		}
		assertRule(t, rep, "KS-POD-DNS-TIMEOUT", result.RuleClear)
	})

	t.Run("timeouts+first-syn-dropped", func(t *testing.T) {
		// The drop: in the node's network namespace, where the pod's packets are routed (its veth's bridge to
		// the node's uplink), after kube-proxy's DNAT of the Service address to CoreDNS (port 53 still).
		drop := []string{"FORWARD", "-s", podIP + "/32", "-p", "udp", "-m", "udp", "--dport", "53", "-j", "DROP"}
		ipt := func(ctx context.Context, op string, rule ...string) (string, error) {
			return host.RunIn(ctx, host.Short, nil, lab.RealNodeNetNS(1), append([]string{"iptables", "-w", "5", op}, rule...)...)
		}
		undrop := func() {
			for i := 0; i < 5; i++ { // -D until -C fails: a rule added twice is removed twice
				if _, err := ipt(context.Background(), "-C", drop...); err != nil {
					return
				}
				if _, err := ipt(context.Background(), "-D", drop...); err != nil {
					t.Errorf("removing the drop rule: %v", err)
					return
				}
			}
		}
		t.Cleanup(undrop)
		if _, err := ipt(ctx, "-I", drop...); err != nil {
			t.Fatal(err)
		}
		dropped0 := time.Now()
		cn.dropFirstSYN(t)
		const window = 8 * time.Second
		curl, rep, na, _, _ := cn.measure(t, window, 1, true)
		out, err := ipt(ctx, "-S", "FORWARD", "-v")
		if err != nil {
			t.Fatal(err)
		}
		dropped := dropCount(out, podIP)
		undropped := time.Now()
		undrop()
		timeouts, share := metric(na, nodeagent.MetricDNSTimeouts, podLabels), metric(na, nodeagent.MetricDNSTimeoutShare, podLabels)
		t.Logf("the rule dropped %d packets; eBPF: %.0f of %.0f queries timed out (share %.2f)", dropped, timeouts,
			metric(na, nodeagent.MetricDNSQueries, podLabels), share)
		if dropped <= 0 {
			t.Errorf("the drop rule saw no packet:\n%s", out)
		}
		if timeouts < nodeagent.DNSTimeoutMin || share < 0.99 || timeouts > float64(dropped) {
			t.Errorf("dns_timeouts %v (share %v) of the pod with %d queries dropped: want every query ended in the watch timed out", timeouts, share, dropped)
		}
		if p99 := metric(na, nodeagent.MetricDNSLatencyP99, podLabels); p99 != -1 {
			t.Errorf("a latency p99 of %v s with no answer", p99)
		}
		// The pod's own view: every lookup begun and returned while the drop was in place failed, after its
		// resolver's two tries of 5 s.
		samples, err := podLookups(ctx, c, ns, podName)
		if err != nil {
			t.Fatal(err)
		}
		var failed []float64
		for _, x := range samples {
			if x.Start.Before(dropped0) || !x.Start.Add(time.Duration(x.Seconds*float64(time.Second))).Before(undropped) {
				continue
			}
			if x.Error == "" || x.Seconds < 5 {
				t.Errorf("a lookup begun after the drop: %+v", x)
			}
			failed = append(failed, x.Seconds)
		}
		slices.Sort(failed)
		if len(failed) > 0 {
			t.Logf("the pod: %d lookups begun and returned while the drop was in place, failed after %.1f..%.1f s", len(failed), failed[0], failed[len(failed)-1])
		}
		assertRule(t, rep, "KS-POD-DNS-TIMEOUT", result.RuleFired)
		want := "pod=" + ns + "/" + podName + " server=" + server
		for _, f := range rep.Findings {
			if f.ID != "KS-POD-DNS-TIMEOUT" {
				continue
			}
			t.Logf("%s [%s] %s", f.ID, f.Severity, f.Summary)
			if len(f.Items) != 1 || f.Items[0].Key != want || f.ItemCount > 1 {
				t.Errorf("items %+v (%d): want the one pod, %q", f.Items, f.ItemCount, want)
			}
			if len(f.Evidence) == 0 || f.Evidence[0].Labels["namespace"] != ns || f.Evidence[0].Labels["pod"] != podName || f.Evidence[0].Labels["node"] != node {
				t.Errorf("evidence %+v: want pod %s/%s on %s", f.Evidence, ns, podName, node)
			}
			if f.Severity.Rank() < result.SeverityWarning.Rank() || !strings.Contains(f.Summary, "pod "+ns+"/"+podName) {
				t.Errorf("finding %s [%s]: %s", f.ID, f.Severity, f.Summary)
			}
		}
		cn.firstSYNDropped(t, curl, rep, na)
	})

	t.Run("coredns-paused+syn-rate-limited", func(t *testing.T) {
		// A second mechanism, at the server rather than on the path: the lab's CoreDNS process stopped
		// (SIGSTOP, by its recorded PID: it holds its socket and answers nothing, as a server stalled on its
		// node or frozen by its cgroup). Every client of the Service times out, the pod among them; each
		// client the rule names is one of the Service's.
		resume, err := lab.PauseComponent(d, lab.CoreDNS)
		if err != nil {
			t.Fatal(err)
		}
		resumed := false
		doResume := func() {
			if !resumed {
				resumed = true
				if err := resume(); err != nil {
					t.Errorf("resuming CoreDNS: %v", err)
				}
			}
		}
		t.Cleanup(doResume)
		cn.limitSYN(t)
		curl, rep, na, _, _ := cn.measure(t, 8*time.Second, 6, true)
		doResume()
		resumedAt := time.Now()
		timeouts, share := metric(na, nodeagent.MetricDNSTimeouts, podLabels), metric(na, nodeagent.MetricDNSTimeoutShare, podLabels)
		t.Logf("CoreDNS stopped: eBPF: %.0f of %.0f queries of the pod timed out (share %.2f)", timeouts, metric(na, nodeagent.MetricDNSQueries, podLabels), share)
		if timeouts < nodeagent.DNSTimeoutMin || share < 0.99 {
			t.Errorf("dns_timeouts %v (share %v) with the server stopped: want every query ended in the watch timed out", timeouts, share)
		}
		assertRule(t, rep, "KS-POD-DNS-TIMEOUT", result.RuleFired)
		want := "pod=" + ns + "/" + podName + " server=" + server
		for _, f := range rep.Findings {
			if f.ID != "KS-POD-DNS-TIMEOUT" {
				continue
			}
			t.Logf("%s [%s] %s", f.ID, f.Severity, f.Summary)
			if !slices.ContainsFunc(f.Items, func(it result.Item) bool { return it.Key == want }) {
				t.Errorf("items %+v: want the pod among them, %q", f.Items, want)
			}
			for _, it := range f.Items {
				if !strings.HasSuffix(it.Key, " server="+server) {
					t.Errorf("item %q: a client of another server than the stopped one's Service", it.Key)
				}
			}
		}
		// The lab's DNS answers again before the next test.
		labtest.Eventually(ctx, t, "the pod's lookups resolving again", func() error {
			s, err := podLookups(ctx, c, ns, podName)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(s, func(x agent.LookupSample) bool { return x.Error == "" && x.Start.After(resumedAt) }) {
				return fmt.Errorf("no lookup begun after CoreDNS resumed has resolved yet")
			}
			return nil
		})
		cn.synLimited(t, curl, rep, na)
	})
}

// connects is the agent's eBPF connect tracer against a peer's own connect timing on the same connections.
// A server pod on lab-node-2 (`agent burn --listen`); in lab-node-1's network namespace (its host network) curl
// connects to it over and over, one connection after another per loop, printing its own time_connect (wrk, the
// issue's peer, times requests, not connects). The agent's figures for that client and destination (source ebpf,
// the client named host network on lab-node-1 and not reported under lab-node-2 too):
//   - on the plain path (tens of µs; plain, in the healthy sweep): the kernel's SYN_SENT -> ESTABLISHED lies inside
//     curl's connect() -> writable, so its p50 is at most curl's; no failure; the rate is curl's; KS-POD-CONNECT-SLOW
//     clear;
//   - with the first SYN of every connect dropped in lab-node-1's OUTPUT chain (iptables' statistic match,
//     every second SYN: each connect's first try is lost and its retransmission, after the initial RTO of 1 s,
//     goes through), the connects the application waits a second for: p50 within 10% of curl's, and
//     KS-POD-CONNECT-SLOW names the client and the destination (first-syn-dropped, in the timeouts run);
//   - a second mechanism, on the server's node and by rate: a SYN-flood limit in lab-node-2's FORWARD chain
//     (iptables' limit match, 4 new connections a second to the server, the rest dropped: the recipes' SYN-flood
//     protection) under six curl loops. The SYNs past the limit are dropped and their connects wait for the
//     retransmission, the others not: KS-POD-CONNECT-SLOW names the client and destination on a share of them
//     (syn-rate-limited, in the coredns-paused run).
//
// (A server too slow to accept, its accept queue full, was tried first: the kernel then mostly drops the
// handshake's last ACK, not the SYN — the client's connect returns at once and its first request waits instead;
// 5 of 36 connects were slow with 27 ListenOverflows. It is a slow-request fault more than a slow-connect one.)
//
// (netem would delay the path instead; this kernel has no netem qdisc.)
type connects struct {
	ctx    context.Context
	sweep  func(*testing.T, time.Duration, bool) (*result.Report, *result.Result, time.Time, time.Time)
	ip     string            // the server pod's
	dest   string            // its address and port
	labels map[string]string // the agent's series for lab-node-1's host network connecting to dest
	item   string            // KS-POD-CONNECT-SLOW's key for them
}

// connectServer is the name of the connect tracer's server pod.
const connectServer = "connect-server"

// createConnectServer creates the server pod in ns on lab-node-2 (newConnects waits for it).
func createConnectServer(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: connectServer, Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: lab.RealNodeName(2)}, TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{burnContainer("listen", "--listen", ":8080")}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// newConnects waits for the server pod createConnectServer made in ns until lab-node-1's host network reaches it.
func newConnects(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string,
	sweep func(*testing.T, time.Duration, bool) (*result.Report, *result.Result, time.Time, time.Time)) *connects {
	t.Helper()
	ip := labtest.WaitPodRunning(ctx, t, c, ns, connectServer).Status.PodIP
	cn := &connects{ctx: ctx, sweep: sweep, ip: ip, dest: ip + ":8080",
		labels: map[string]string{"node": lab.RealNodeName(1), "client": lab.RealNodeIP(1), "kind": nodeagent.DNSClientHost, "dest": ip + ":8080", "source": "ebpf"},
		item:   "client=" + lab.RealNodeName(1) + "/" + lab.RealNodeIP(1) + " dest=" + ip + ":8080"}
	labtest.Eventually(ctx, t, "the server answering", func() error {
		_, err := cn.in(ctx, "curl", "-sf", "-o", "/dev/null", "http://"+cn.dest+"/")
		return err
	})
	return cn
}

// in runs argv in lab-node-1's network namespace (its host network).
func (cn *connects) in(ctx context.Context, argv ...string) (string, error) {
	return host.RunIn(ctx, host.Short, nil, lab.RealNodeNetNS(1), argv...)
}

// measure runs loops curl loops while a sweep of window runs (through `kubeslow run` with viaRun); curl's
// time_connects sorted, and the agent's report and figures, with the time the sweep ran.
func (cn *connects) measure(t *testing.T, window time.Duration, loops int, viaRun bool) (curl []float64, rep *result.Report, na *result.Result, began, ended time.Time) {
	t.Helper()
	loopCtx, stop := context.WithCancel(cn.ctx)
	var mu sync.Mutex
	loopDone := make(chan error, loops)
	for range loops {
		go func() {
			for loopCtx.Err() == nil {
				out, err := cn.in(loopCtx, "curl", "-s", "-o", "/dev/null", "-m", "20", "-w", "%{time_connect}", "http://"+cn.dest+"/")
				if err != nil {
					if loopCtx.Err() == nil {
						loopDone <- fmt.Errorf("curl: %v %s", err, out)
						return
					}
					break
				}
				v, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
				if err != nil {
					loopDone <- fmt.Errorf("curl's time_connect %q: %v", out, err)
					return
				}
				mu.Lock()
				curl = append(curl, v)
				mu.Unlock()
			}
			loopDone <- nil
		}()
	}
	rep, na, began, ended = cn.sweep(t, window, viaRun)
	stop()
	for range loops {
		if err := <-loopDone; err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(curl)
	if len(curl) < 5 {
		t.Fatalf("curl connected %d times", len(curl))
	}
	curlRate := float64(len(curl)) / ended.Sub(began).Seconds()
	for _, rec := range na.Records {
		if rec.Labels["connects"] == "" || strings.Contains(rec.Labels["unread"], agent.ConnectsUnread) {
			t.Errorf("%s: the connect tracer did not run: %s", rec.ID, rec.Labels["unread"])
		}
	}
	for _, m := range na.Metrics {
		if m.Name == nodeagent.MetricTCPConnects && m.Labels["dest"] == cn.dest && m.Labels["node"] != lab.RealNodeName(1) {
			t.Errorf("lab-node-1's connects reported under %s too: %+v", m.Labels["node"], m)
		}
	}
	labels := cn.labels
	connects, failures := metric(na, nodeagent.MetricTCPConnects, labels), metric(na, nodeagent.MetricTCPConnectFailures, labels)
	t.Logf("curl: %d connects (%.1f/s), time_connect p50 %.3f ms (%.3f..%.3f); eBPF: %.0f connects (%.1f/s), %.0f failed, %.0f slow, p50 %.3f ms, p99 %.3f ms",
		len(curl), curlRate, 1000*curl[len(curl)/2], 1000*curl[0], 1000*curl[len(curl)-1], connects, metric(na, nodeagent.MetricTCPConnectsPerSecond, labels),
		failures, metric(na, nodeagent.MetricTCPConnectsSlow, labels), 1000*metric(na, nodeagent.MetricTCPConnectLatencyP50, labels), 1000*metric(na, nodeagent.MetricTCPConnectLatencyP99, labels))
	if connects < 3 || failures != 0 {
		t.Fatalf("eBPF: %v connects, %v failed, of curl's to %s from %s", connects, failures, cn.dest, lab.RealNodeIP(1))
	}
	if r := metric(na, nodeagent.MetricTCPConnectsPerSecond, labels); r < curlRate*0.5 || r > curlRate*2 {
		t.Errorf("tcp_connects_per_second %.1f against curl's %.1f over the run", r, curlRate)
	}
	return curl, rep, na, began, ended
}

// slowItems are KS-POD-CONNECT-SLOW's items (none when it did not fire), logged.
func slowItems(t *testing.T, rep *result.Report) []string {
	var keys []string
	for _, f := range rep.Findings {
		if f.ID == "KS-POD-CONNECT-SLOW" {
			t.Logf("%s [%s] %s", f.ID, f.Severity, f.Summary)
			for _, it := range f.Items {
				keys = append(keys, it.Key)
			}
		}
	}
	return keys
}

// plain checks a sweep of the plain path (measure's figures, one curl loop).
func (cn *connects) plain(t *testing.T, curl []float64, rep *result.Report, na *result.Result) {
	t.Helper()
	p50, p99 := metric(na, nodeagent.MetricTCPConnectLatencyP50, cn.labels), metric(na, nodeagent.MetricTCPConnectLatencyP99, cn.labels)
	// Inside curl's interval (the histogram is within 1%).
	if p50 <= 0 || p50 > curl[len(curl)/2]*1.01 || p99 < p50 {
		t.Errorf("tcp_connect_latency p50 %.3f ms (p99 %.3f) against curl's time_connect p50 %.3f ms: want at most curl's", 1000*p50, 1000*p99, 1000*curl[len(curl)/2])
	}
	// The healthy lab: no client's connects wait for a retransmission.
	assertRule(t, rep, "KS-POD-CONNECT-SLOW", result.RuleClear)
	if items := slowItems(t, rep); len(items) > 0 {
		t.Errorf("KS-POD-CONNECT-SLOW on the plain path: %v", items)
	}
}

// dropFirstSYN drops the first SYN of every connect from lab-node-1 to the server (every second one, in
// lab-node-1's OUTPUT chain) until the test ends: each connect's first try is lost and its retransmission, after
// the initial RTO, goes through (first-syn-dropped).
func (cn *connects) dropFirstSYN(t *testing.T) {
	t.Helper()
	drop := []string{"OUTPUT", "-p", "tcp", "--syn", "-d", cn.ip + "/32", "--dport", "8080", "-m", "statistic", "--mode", "nth", "--every", "2", "--packet", "0", "-j", "DROP"}
	if out, err := cn.in(cn.ctx, append([]string{"iptables", "-w", "5", "-I"}, drop...)...); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := cn.in(context.Background(), append([]string{"iptables", "-w", "5", "-D"}, drop...)...); err != nil {
			t.Errorf("removing the SYN drop: %v %s", err, out)
		}
	})
}

// firstSYNDropped checks a sweep of dropFirstSYN's fault (measure's figures, one curl loop).
func (cn *connects) firstSYNDropped(t *testing.T, curl []float64, rep *result.Report, na *result.Result) {
	t.Helper()
	p50, curlP50 := metric(na, nodeagent.MetricTCPConnectLatencyP50, cn.labels), curl[len(curl)/2]
	if curlP50 < 0.9 {
		t.Fatalf("curl's time_connect p50 %.3f s: the SYN drop did not hold connects for the RTO", curlP50)
	}
	if p50 < curlP50*0.9 || p50 > curlP50*1.1 {
		t.Errorf("tcp_connect_latency_p50 %.3f s against curl's time_connect p50 %.3f s: want within 10%%", p50, curlP50)
	}
	if items := slowItems(t, rep); !slices.Contains(items, cn.item) {
		t.Errorf("KS-POD-CONNECT-SLOW items %v: want %q", items, cn.item)
	}
}

// limitSYN limits the SYNs to the server to 4 a second in lab-node-2's FORWARD chain, the rest dropped, until
// the test ends (syn-rate-limited).
func (cn *connects) limitSYN(t *testing.T) {
	t.Helper()
	inServer := func(ctx context.Context, argv ...string) (string, error) {
		return host.RunIn(ctx, host.Short, nil, lab.RealNodeNetNS(2), argv...)
	}
	match := []string{"FORWARD", "-p", "tcp", "--syn", "-d", cn.ip + "/32", "--dport", "8080"}
	accept := append(append([]string{}, match...), "-m", "limit", "--limit", "4/second", "--limit-burst", "4", "-j", "ACCEPT")
	drop := append(append([]string{}, match...), "-j", "DROP")
	for i, rule := range [][]string{accept, drop} {
		if out, err := inServer(cn.ctx, append([]string{"iptables", "-w", "5", "-I", "FORWARD", strconv.Itoa(i + 1)}, rule[1:]...)...); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		t.Cleanup(func() {
			if out, err := inServer(context.Background(), append([]string{"iptables", "-w", "5", "-D"}, rule...)...); err != nil {
				t.Errorf("removing the SYN limit: %v %s", err, out)
			}
		})
	}
}

// synLimited checks a sweep of limitSYN's fault (measure's figures, six curl loops).
func (cn *connects) synLimited(t *testing.T, curl []float64, rep *result.Report, na *result.Result) {
	t.Helper()
	slow := len(curl) - sort.SearchFloat64s(curl, 0.9)
	if slow < nodeagent.ConnectSlowMin || slow == len(curl) {
		t.Fatalf("%d of curl's %d connects took 0.9 s or more: want some, not all, past the limit", slow, len(curl))
	}
	if got := metric(na, nodeagent.MetricTCPConnectsSlow, cn.labels); got < nodeagent.ConnectSlowMin {
		t.Errorf("tcp_connects_slow %v, where curl saw %d connects of 0.9 s or more", got, slow)
	}
	if items := slowItems(t, rep); !slices.Contains(items, cn.item) {
		t.Errorf("KS-POD-CONNECT-SLOW items %v: want %q", items, cn.item)
	}
}

// logPod logs the pod's status and its namespace's events (a failed test's evidence).
func logPod(t *testing.T, c kubernetes.Interface, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Logf("pod %s/%s: %v", ns, name, err)
	} else {
		t.Logf("pod %s/%s on %q: %s %s %s", ns, name, p.Spec.NodeName, p.Status.Phase, p.Status.Reason, p.Status.Message)
		for _, cs := range p.Status.ContainerStatuses {
			t.Logf("  container %s: ready %v, restarts %d, state %+v", cs.Name, cs.Ready, cs.RestartCount, cs.State)
		}
	}
	if p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && p.Spec.NodeName != "" {
		if n, err := c.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{}); err == nil {
			for _, img := range n.Status.Images {
				t.Logf("  %s holds %v", n.Name, img.Names)
			}
		}
	}
	if evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			t.Logf("  event %s %s/%s %s: %s (x%d)", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
}

// podLookups are the lookups the pod logged (`probe dns-lookups --each`: a JSON line each as it returns).
func podLookups(ctx context.Context, c kubernetes.Interface, ns, pod string) ([]agent.LookupSample, error) {
	b, err := c.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var out []agent.LookupSample
	for l := range bytes.Lines(b) {
		if !bytes.HasPrefix(l, []byte(`{"name"`)) {
			continue
		}
		var s agent.LookupSample
		if err := json.Unmarshal(l, &s); err != nil {
			return nil, fmt.Errorf("the pod's line %q: %w", l, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// lookupStarts are the sorted starts of the samples begun in [from, to].
func lookupStarts(samples []agent.LookupSample, from, to time.Time) []time.Time {
	var out []time.Time
	for _, s := range samples {
		if !s.Start.Before(from) && !s.Start.After(to) {
			out = append(out, s.Start)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// countRange is the fewest and the most of starts in any stretch of length w inside [from, to] (slid by 5 ms).
func countRange(starts []time.Time, from, to time.Time, w time.Duration) (lo, hi int) {
	lo = len(starts)
	for s := from; !s.Add(w).After(to); s = s.Add(5 * time.Millisecond) {
		n := 0
		for _, x := range starts {
			if !x.Before(s) && x.Before(s.Add(w)) {
				n++
			}
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	return lo, hi
}

// dropCount is the packet counter of the FORWARD rule dropping src's UDP to port 53, from `iptables -S -v`
// ("-A FORWARD -s 10.1.0.5/32 -p udp -m udp --dport 53 -c 12 840 -j DROP"); -1 if absent.
func dropCount(rules, src string) int64 {
	re := regexp.MustCompile(`-c (\d+) \d+`)
	for l := range strings.Lines(rules) {
		if strings.Contains(l, "-s "+src+"/32 ") && strings.Contains(l, "--dport 53") && strings.Contains(l, "-j DROP") {
			if m := re.FindStringSubmatch(l); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				return n
			}
		}
	}
	return -1
}

// assertRule checks the rule's evaluation in the report.
func assertRule(t *testing.T, rep *result.Report, id string, want result.RuleStatus) {
	t.Helper()
	for _, r := range rep.Rules {
		if r.ID == id {
			if r.Status != want {
				t.Errorf("%s %s (%s), want %s", id, r.Status, r.Reason, want)
			}
			return
		}
	}
	t.Errorf("%s not evaluated at all", id)
}

// deleteNamespace deletes ns and waits (up to a minute) until it is gone. A namespace already being deleted
// (the apiserver answers Conflict while its content goes) is waited for.
func deleteNamespace(t *testing.T, c kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		t.Errorf("deleting namespace %s: %v", ns, err)
		return
	}
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s not gone after a minute", ns)
	}
}
