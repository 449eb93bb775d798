package check

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/auditlog"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/churn"
	"github.com/kubeslow/kubeslow/internal/measure/churn/churntest"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/netpath"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The fixtures below are what each measurement's own analysis (its pure Analyze, or the pure part of its
// Run) makes of scripted or recorded inputs: apiserver and etcd metric scrapes (recorded on the lab, and
// written here in the exposition format), node objects, pod timelines, DNS answers, audit events, agent
// readings. Rules are tested on those results, as a user's run would produce them, never on metrics made
// up to fit the rule.

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func report(facts map[string]string, rs ...result.Result) *result.Report {
	return &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Cluster: result.Cluster{Facts: facts}, Results: rs}
}

// expo writes a Prometheus text exposition: families in order, each with its TYPE line.
type expo struct {
	order []string
	typ   map[string]string
	lines map[string][]string
}

func newExpo() *expo { return &expo{typ: map[string]string{}, lines: map[string][]string{}} }

func (e *expo) add(family, typ, line string) {
	if _, ok := e.typ[family]; !ok {
		e.order = append(e.order, family)
		e.typ[family] = typ
	}
	e.lines[family] = append(e.lines[family], line)
}

func (e *expo) counter(name, labels string, v float64) {
	e.add(name, "counter", fmt.Sprintf("%s{%s} %g", name, labels, v))
}

func (e *expo) gauge(name, labels string, v float64) {
	e.add(name, "gauge", fmt.Sprintf("%s{%s} %g", name, labels, v))
}

var bounds = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// hist adds a histogram of n observations of value v (labels without le).
func (e *expo) hist(name, labels string, n int, v float64) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	for _, b := range bounds {
		c := 0
		if v <= b {
			c = n
		}
		e.add(name, "histogram", fmt.Sprintf("%s_bucket{%s%sle=\"%g\"} %d", name, labels, sep, b, c))
	}
	e.add(name, "histogram", fmt.Sprintf("%s_bucket{%s%sle=\"+Inf\"} %d", name, labels, sep, n))
	e.add(name, "histogram", fmt.Sprintf("%s_sum{%s} %g", name, labels, float64(n)*v))
	e.add(name, "histogram", fmt.Sprintf("%s_count{%s} %d", name, labels, n))
}

func (e *expo) snapshot(t *testing.T, at time.Time) *prom.Snapshot {
	t.Helper()
	var b strings.Builder
	for _, f := range e.order {
		fmt.Fprintf(&b, "# TYPE %s %s\n%s\n", f, e.typ[f], strings.Join(e.lines[f], "\n"))
	}
	s, err := prom.Parse(strings.NewReader(b.String()), at)
	if err != nil {
		t.Fatalf("exposition: %v\n%s", err, b.String())
	}
	return s
}

// scrapes returns the two scrapes of a window: the same series, at zero and then as written by fill.
func scrapes(t *testing.T, window time.Duration, fill func(e *expo, scale float64)) (*prom.Snapshot, *prom.Snapshot) {
	before, after := newExpo(), newExpo()
	fill(before, 0)
	fill(after, 1)
	return before.snapshot(t, t0), after.snapshot(t, t0.Add(window))
}

// apiServer is what the apiserver's metrics say over a minute.
type apiServer struct {
	getLatency, listLatency float64
	conflicts               map[string]int // per minute, by resource
	apfRejected             int
	listBytes               map[string]float64 // per second, by resource
}

func (a apiServer) result(t *testing.T) result.Result {
	before, after := scrapes(t, time.Minute, func(e *expo, k float64) {
		n := int(200 * k)
		e.hist("apiserver_request_sli_duration_seconds", `verb="GET",resource="pods",subresource="",scope="resource"`, n, a.getLatency)
		e.hist("apiserver_request_sli_duration_seconds", `verb="LIST",resource="pods",subresource="",scope="cluster"`, n, a.listLatency)
		e.counter("apiserver_request_total", `code="200",group="",resource="pods",verb="GET"`, float64(n))
		for res, c := range a.conflicts {
			e.counter("apiserver_request_total", fmt.Sprintf(`code="409",group="crd.projectcalico.org",resource=%q,verb="PUT"`, res), float64(c)*k)
		}
		e.counter("apiserver_flowcontrol_rejected_requests_total", `priority_level="workload-low",reason="queue-full"`, float64(a.apfRejected)*k)
		for res, bps := range a.listBytes {
			// 100 LISTs in the minute, each of the size that makes bps.
			e.hist("apiserver_response_sizes", fmt.Sprintf(`verb="LIST",resource=%q`, res), int(100*k), bps*60/100)
		}
	})
	return apislo.Analyze(before, after)
}

var healthyAPI = apiServer{getLatency: 0.02, listLatency: 0.3, listBytes: map[string]float64{"pods": 200e3, "events": 150e3}}

// etcdServer is what etcd's metrics and alarms say over a minute.
type etcdServer struct {
	fsync, commit  float64
	dbBytes, quota float64
	leaderChanges  int
	alarms         []string
}

func (s etcdServer) result(t *testing.T) result.Result {
	before, after := scrapes(t, time.Minute, func(e *expo, k float64) {
		e.hist("etcd_disk_wal_fsync_duration_seconds", "", int(600*k), s.fsync)
		e.hist("etcd_disk_backend_commit_duration_seconds", "", int(300*k), s.commit)
		e.gauge("etcd_mvcc_db_total_size_in_bytes", "", s.dbBytes)
		e.gauge("etcd_server_quota_backend_bytes", "", s.quota)
		e.counter("etcd_server_leader_changes_seen_total", "", 1+float64(s.leaderChanges)*k)
	})
	return etcdhealth.Analyze(before, after, s.alarms)
}

var healthyEtcd = etcdServer{fsync: 0.003, commit: 0.008, dbBytes: 200e6, quota: 2 << 30}

// recorded parses scrapes recorded on the lab (internal/prom/testdata, gzip by name), 20 s apart.
func recorded(t *testing.T, files ...string) []*prom.Snapshot {
	t.Helper()
	var snaps []*prom.Snapshot
	for i, f := range files {
		b, err := os.ReadFile("../prom/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		r := io.Reader(bytes.NewReader(b))
		if strings.HasSuffix(f, ".gz") {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatal(err)
			}
		}
		s, err := prom.Parse(r, t0.Add(time.Duration(i)*20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	return snaps
}

// recordedEtcd is etcd's metrics as scraped on the lab (no alarm).
func recordedEtcd(t *testing.T) result.Result {
	s := recorded(t, "etcd-metrics-1.txt", "etcd-metrics-2.txt")
	return etcdhealth.Analyze(s[0], s[1], nil)
}

// recordedAPI is the apiserver's metrics as scraped on the lab during a conflict storm on IPAM blocks.
func recordedAPI(t *testing.T) result.Result {
	s := recorded(t, "apiserver-metrics-conflict-storm-1.txt.gz", "apiserver-metrics-conflict-storm-2.txt.gz")
	return apislo.Analyze(s[0], s[1])
}

func nodeObjects(n int, notReady int, pressure corev1.NodeConditionType) []corev1.Node {
	var out []corev1.Node
	for i := range n {
		st := corev1.ConditionTrue
		if i < notReady {
			st = corev1.ConditionFalse
		}
		conds := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
		if pressure != "" && i == n-1 {
			conds = append(conds, corev1.NodeCondition{Type: pressure, Status: corev1.ConditionTrue})
		}
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}, Status: corev1.NodeStatus{Conditions: conds}})
	}
	return out
}

// pods scripts a start-up run: n pods created every gap seconds, each with its phases (seconds) from ph.
type podRun struct {
	n       int
	gap     float64
	creator string
	qps     float64
	ph      func(i int) (node string, schedule, sandbox, start, observe float64)
	stuck   int
}

func (p podRun) result() result.Result {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var ts []podstartup.Timeline
	var lat []time.Duration
	for i := range p.n {
		node, s, sb, st, obs := p.ph(i)
		c := float64(i) * p.gap
		created := at(c)
		ts = append(ts, podstartup.Timeline{Name: fmt.Sprintf("p%d", i), Node: node,
			Created: created.Truncate(time.Second), SeenCreated: created.Add(2 * time.Millisecond),
			SeenScheduled: at(c + s), Scheduled: at(c + s).Truncate(time.Second),
			SandboxReady: at(c + s + sb).Truncate(time.Second), Started: at(c + s + sb + st).Truncate(time.Second),
			SeenRunning: at(c + s + sb + st + obs)})
		lat = append(lat, 30*time.Millisecond)
	}
	for i := range p.stuck {
		ts = append(ts, podstartup.Timeline{Name: fmt.Sprintf("stuck%d", i), SeenCreated: at(float64(p.n) * p.gap),
			LastEvent: "FailedScheduling: 0/4 nodes are available: 4 Insufficient cpu"})
	}
	in := podstartup.Input{Timelines: ts, Creator: p.creator, RequestedQPS: p.qps, Expected: p.n + p.stuck}
	if p.creator == "client" {
		in.CreateLatency, in.ClientWait = lat, 200*time.Millisecond
	}
	return podstartup.Analyze(in)
}

func even(i int) (string, float64, float64, float64, float64) {
	return fmt.Sprintf("n%d", i%4), 0.1, 0.3, 0.2, 0.05
}

var healthyPods = podRun{n: 120, gap: 0.05, creator: "client", qps: 20, ph: even}

// slowSandboxNode: one node of four has a slow CNI (case E's sandbox phase).
var slowSandboxNode = podRun{n: 120, gap: 0.05, creator: "client", qps: 20, ph: func(i int) (string, float64, float64, float64, float64) {
	node, s, sb, st, obs := even(i)
	if node == "n2" {
		sb = 3.2
	}
	return node, s, sb, st, obs
}}

// slowScheduler binds 5 pods a second.
var slowScheduler = podRun{n: 100, gap: 0.01, creator: "client", qps: 100, ph: func(i int) (string, float64, float64, float64, float64) {
	node, _, sb, st, obs := even(i)
	return node, float64(i) / 5, sb, st, obs
}}

type dnsRun struct{ ready, endpoint, resolved float64 }

func (d dnsRun) result() result.Result {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	m := dnsready.New(dnsready.Options{Wait: 2 * time.Minute, Backoff: dnsready.DefaultBackoff})
	res := result.Result{Name: dnsready.Name, Status: result.StatusPass}
	var ts []dnsready.Target
	for i := range 5 {
		off := float64(i) * 0.2
		ts = append(ts, dnsready.Target{Pod: fmt.Sprintf("peer-%d", i), Name: fmt.Sprintf("peer-%d.peers", i), Asked: at(0),
			Ready: at(d.ready + off), Endpoint: at(d.endpoint + off), Resolved: at(d.resolved + off), Attempts: 5})
	}
	m.Report(&res, ts, at(0.1), at(0))
	return res
}

type netRun struct {
	podRatio                  float64 // pod->pod other node over host->host, new connections
	conntrackFill, neighbours float64
}

func (n netRun) result() result.Result {
	res := result.Result{Name: netpath.Name, Status: result.StatusPass}
	paths := []netpath.Path{{Name: "host->host"}, {Name: "host->pod"}, {Name: "pod->pod other node"}, {Name: "pod->Service"}}
	samples := map[string][]float64{}
	for _, p := range paths {
		f := 0.97
		if p.Name == "host->host" {
			f = 1
		}
		nf := f
		if p.Name == "pod->pod other node" {
			nf = n.podRatio
		}
		for _, r := range []float64{0.98, 1, 1.02} {
			samples[netpath.SampleKey(p.Name, "rps", "keepalive")] = append(samples[netpath.SampleKey(p.Name, "rps", "keepalive")], 20000*f*r)
			samples[netpath.SampleKey(p.Name, "rps", "new")] = append(samples[netpath.SampleKey(p.Name, "rps", "new")], 5000*nf*r)
			samples[netpath.SampleKey(p.Name, "stream_gbit", "stream")] = append(samples[netpath.SampleKey(p.Name, "stream_gbit", "stream")], 9*f*r)
		}
	}
	netpath.Summarize(&res, paths, samples)
	netpath.NodeNetResult(&res, "node n1", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "flannel.1", MTU: 1450, Kind: "vxlan"}},
		ConntrackEntries: int64(n.conntrackFill * 262144), ConntrackMax: 262144, Neighbours: int64(n.neighbours * 1024), NeighThresh3: 1024,
		KubeProxyMode: "iptables", KubeProxyRules: map[string]int64{"nat": 40123}})
	netpath.NodeNetResult(&res, "pod", &agent.NodeNet{Interfaces: []agent.Iface{{Name: "eth0", MTU: 1450}}, ConntrackEntries: -1, Neighbours: -1})
	return res
}

// auditRun is an audit log of a minute: a client LISTing events lists times, and one updating IPAM blocks
// with conflicts 409s.
func auditRun(lists, conflicts int) result.Result {
	a := auditlog.NewAnalyzer()
	add := func(i, n int, ev auditlog.Event) {
		ev.Stage, ev.Received = "ResponseComplete", t0.Add(time.Duration(i)*time.Minute/time.Duration(max(n, 1)))
		a.Add(&ev)
	}
	for i := range 600 {
		add(i, 600, auditlog.Event{Verb: "get", User: "system:node:n1", UserAgent: "kubelet/v1.31", Resource: "pods", Namespace: "default", Name: "x", Code: 200})
	}
	for i := range 20 {
		add(i, 20, auditlog.Event{Verb: "list", User: "system:kube-controller-manager", UserAgent: "kube-controller-manager/v1.31", Resource: "pods", Code: 200})
	}
	for i := range lists {
		add(i, lists, auditlog.Event{Verb: "list", User: "system:serviceaccount:mon:agent", UserAgent: "node-monitor/1.0", Resource: "events", Code: 200})
	}
	for i := range conflicts {
		add(i, conflicts, auditlog.Event{Verb: "update", User: "system:serviceaccount:kube-system:calico-node", UserAgent: "calico-ipam/v3.27",
			Resource: "ipamblocks", APIGroup: "crd.projectcalico.org", Name: "10-0-1-0-26", Code: 409})
	}
	return a.Result(5)
}

func diskRun(p99 time.Duration) result.Result {
	return disk.BenchResult("/var/lib/etcd", disk.SyncSummary{P50: p99 / 4, P99: p99, Max: 2 * p99, IOPS: 400, N: 10029}, t0, t0.Add(time.Minute))
}

func churnRun(m churntest.Model) func(*testing.T) *result.Report {
	return func(*testing.T) *result.Report { return report(nil, churn.Analyze(m.Input())) }
}

// ruleCase is one rule's firing and clear fixtures.
type ruleCase struct {
	fire, clear func(t *testing.T) *result.Report
}

func ruleCases() map[string]ruleCase {
	one := func(f func(t *testing.T) result.Result) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report { return report(nil, f(t)) }
	}
	api := func(a apiServer) func(t *testing.T) *result.Report {
		return one(func(t *testing.T) result.Result { return a.result(t) })
	}
	etcd := func(s etcdServer) func(t *testing.T) *result.Report {
		return one(func(t *testing.T) result.Result { return s.result(t) })
	}
	pods := func(p podRun) func(t *testing.T) *result.Report {
		return one(func(*testing.T) result.Result { return p.result() })
	}
	dns := func(d dnsRun) func(t *testing.T) *result.Report {
		return one(func(*testing.T) result.Result { return d.result() })
	}
	net := func(n netRun) func(t *testing.T) *result.Report {
		return one(func(*testing.T) result.Result { return n.result() })
	}
	audit := func(lists, conflicts int) func(t *testing.T) *result.Report {
		return one(func(*testing.T) result.Result { return auditRun(lists, conflicts) })
	}
	nodeSet := func(n, notReady int, pressure corev1.NodeConditionType, facts map[string]string) func(t *testing.T) *result.Report {
		return func(*testing.T) *result.Report {
			return report(facts, nodes.Analyze(nodeObjects(n, notReady, pressure)))
		}
	}
	// flaps: 5 nodes, the first notReady of them NotReady now, and NodeNotReady Events on n0 (count times).
	flaps := func(notReady int, count int32) func(t *testing.T) *result.Report {
		return func(*testing.T) *result.Report {
			ev := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n0"}, Reason: nodes.NotReadyReason, Count: count}
			return report(nil, nodes.Analyze(nodeObjects(5, notReady, ""), ev))
		}
	}
	ipam := func(resource string) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report {
			a := healthyAPI
			a.conflicts = map[string]int{resource: 3000}
			return report(nil, slowSandboxNode.result(), a.result(t))
		}
	}
	with := func(f func(*apiServer)) apiServer {
		a := healthyAPI
		f(&a)
		return a
	}
	withEtcd := func(f func(*etcdServer)) etcdServer {
		s := healthyEtcd
		f(&s)
		return s
	}
	healthyNet := netRun{podRatio: 0.95, conntrackFill: 0.1, neighbours: 0.05}
	healthyDNS := dnsRun{ready: 3, endpoint: 3.2, resolved: 3.6}
	cases := map[string]ruleCase{
		"KS-NODE-001":  {nodeSet(5, 2, "", nil), nodeSet(5, 0, corev1.NodeMemoryPressure, nil)},
		"KS-NODE-002":  {nodeSet(5, 0, corev1.NodeDiskPressure, nil), nodeSet(5, 2, "", nil)},
		"KS-NODE-FLAP": {flaps(0, 3), flaps(1, 1)}, // NotReady three times and Ready now; down once and still down
		"KS-API-LATENCY": {api(with(func(a *apiServer) { a.getLatency = 3 })),
			api(with(func(a *apiServer) { a.listLatency = 20 }))}, // a slow LIST is not a slow GET
		"KS-API-LIST-LATENCY": {api(with(func(a *apiServer) { a.listLatency = 45 })),
			api(with(func(a *apiServer) { a.listLatency = 20 }))}, // slow, but within LIST's 30 s
		"KS-API-409": {api(with(func(a *apiServer) { a.conflicts = map[string]int{"ipamblocks": 3000} })),
			api(with(func(a *apiServer) { a.conflicts = map[string]int{"ipamblocks": 30} }))},
		"KS-API-THROTTLED": {api(with(func(a *apiServer) { a.apfRejected = 40 })), api(healthyAPI)},
		"KS-API-LIST-BYTES": {api(with(func(a *apiServer) { a.listBytes = map[string]float64{"events": 80e6, "pods": 2e6} })),
			api(with(func(a *apiServer) { a.listBytes = map[string]float64{"events": 0.6e6, "pods": 0.1e6} }))}, // dominant, but small
		"KS-ETCD-FSYNC":   {etcd(withEtcd(func(s *etcdServer) { s.fsync = 0.04 })), one(recordedEtcd)},
		"KS-ETCD-COMMIT":  {etcd(withEtcd(func(s *etcdServer) { s.commit = 0.09 })), one(recordedEtcd)},
		"KS-ETCD-NOSPACE": {etcd(withEtcd(func(s *etcdServer) { s.alarms = []string{"NOSPACE"} })), etcd(withEtcd(func(s *etcdServer) { s.alarms = []string{"CORRUPT"} }))},
		"KS-ETCD-QUOTA":   {etcd(withEtcd(func(s *etcdServer) { s.dbBytes = 1.8e9 })), etcd(healthyEtcd)},
		"KS-ETCD-LEADER":  {etcd(withEtcd(func(s *etcdServer) { s.leaderChanges = 3 })), one(recordedEtcd)},
		"KS-ETCD-EVENTS": {nodeSet(600, 0, "", map[string]string{"events-etcd": "shared"}),
			nodeSet(600, 0, "", map[string]string{"events-etcd": "separate"})},
		"KS-POD-SLO":   {pods(slowScheduler), pods(slowSandboxNode)},
		"KS-POD-PHASE": {pods(slowScheduler), pods(healthyPods)},
		"KS-POD-NODE":  {pods(slowSandboxNode), pods(slowScheduler)}, // every node slow alike is not one slow node
		"KS-POD-RATE": {pods(podRun{n: 150, gap: 0.05, creator: "controller", ph: even}),
			pods(podRun{n: 150, gap: 0.01, creator: "controller", ph: even})},
		"KS-POD-CREATE": {pods(podRun{n: 120, gap: 0.1, creator: "client", qps: 20, ph: even}), pods(healthyPods)},
		"KS-POD-STUCK":  {pods(podRun{n: 50, gap: 0.05, creator: "client", qps: 20, ph: even, stuck: 3}), pods(healthyPods)},
		"KS-CNI-IPAM":   {ipam("ipamblocks"), ipam("configmaps")},
		"KS-CP-SATURATED": {cpSaturated(saturated, with(func(a *apiServer) { a.getLatency = 1.8 }), nil),
			cpSaturated(saturated, healthyAPI, nil)}, // busy but within the SLOs
		"KS-DNS-LAG": {dns(dnsRun{ready: 3, endpoint: 3.2, resolved: 20.1}), dns(healthyDNS)},
		"KS-DNS-BACKOFF": {dns(dnsRun{ready: 3, endpoint: 3.2, resolved: 20.1}),
			dns(dnsRun{ready: 3, endpoint: 3.2, resolved: 8})}, // lag within the negative cache's two periods
		"KS-NET-POD":        {net(netRun{podRatio: 0.06, conntrackFill: 0.1}), net(healthyNet)},
		"KS-NODE-CONNTRACK": {net(netRun{podRatio: 0.95, conntrackFill: 0.93}), net(healthyNet)},
		"KS-NODE-NEIGH":     {net(netRun{podRatio: 0.95, neighbours: 0.85}), net(healthyNet)},
		"KS-AUDIT-LIST":     {audit(1500, 0), audit(40, 0)}, // a dominant client, and one too slow to matter
		"KS-AUDIT-409":      {audit(0, 800), audit(0, 30)},  // a storm, and a few conflicts
		"KS-DISK-SYNC":      {one(func(*testing.T) result.Result { return diskRun(16 * time.Millisecond) }), one(func(*testing.T) result.Result { return diskRun(2 * time.Millisecond) })},
		// Churn: the synthetic mechanisms of churntest through churn.Analyze (churn_rules_test.go runs them all).
		"KS-CHURN-DISK-KNEE": {churnRun(churntest.Credits), churnRun(churntest.ControlPlane)},              // a knee the disk shared, and one it did not
		"KS-CHURN-KNEE":      {churnRun(churntest.ControlPlane), churnRun(churntest.Credits)},              // the other way round
		"KS-CHURN-DISK-SLOW": {churnRun(churntest.SteadySlowDisk), churnRun(churntest.SlowDiskFastStarts)}, // slow starts on it, and fast ones
	}
	for id, c := range nodeRuleCases() {
		cases[id] = c
	}
	return cases
}

// TestEveryRuleFiresAndClears: every rule has a fixture on which it fires and one on which it stays clear,
// both as the measurement's analysis produced them; a rule without both fails the test.
func TestEveryRuleFiresAndClears(t *testing.T) {
	cases := ruleCases()
	for _, rule := range Rules() {
		t.Run(rule.ID, func(t *testing.T) {
			c, ok := cases[rule.ID]
			if !ok {
				t.Fatalf("rule %s has no firing and clear fixture in ruleCases", rule.ID)
			}
			for _, want := range []result.RuleStatus{result.RuleFired, result.RuleClear} {
				r := c.clear(t)
				if want == result.RuleFired {
					r = c.fire(t)
				}
				fs, evals := Evaluate(r, []Rule{rule})
				if evals[0].Status != want {
					t.Fatalf("want %s, got %s %s", want, evals[0].Status, evals[0].Reason)
				}
				if want == result.RuleFired {
					f := fs[0]
					if strings.Contains(f.Summary, "{{") || strings.Contains(f.Summary, "<no value>") {
						t.Errorf("summary not filled in: %q", f.Summary)
					}
					r.Findings = fs
					if err := r.Validate(); err != nil {
						t.Error(err)
					}
					t.Logf("%s", f.Summary)
				}
			}
		})
	}
	for id := range cases {
		found := false
		for _, r := range Rules() {
			found = found || r.ID == id
		}
		if !found {
			t.Errorf("ruleCases has %s, which is no rule", id)
		}
	}
}

// TestRulesReadProducedMetrics: every metric a rule names (its conditions' and the ones its Match reads) is
// produced by its measurement's analysis of the fixtures; a misspelt or renamed metric would leave a rule
// clear forever.
func TestRulesReadProducedMetrics(t *testing.T) {
	produced := map[Metric]bool{}
	add := func(r *result.Report) {
		for _, res := range r.Results {
			for _, m := range res.Metrics {
				produced[Metric{res.Name, m.Name}] = true
			}
		}
	}
	for _, c := range ruleCases() {
		add(c.fire(t))
		add(c.clear(t))
	}
	add(report(nil, recordedAPI(t)))
	var missing []string
	for _, rule := range Rules() {
		for _, m := range rule.Metrics() {
			if !produced[m] {
				missing = append(missing, rule.ID+": "+m.String())
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("rules read metrics no measurement produces:\n%s", strings.Join(missing, "\n"))
	}
}

// TestRecordedConflictStorm: the lab's recorded conflict storm (real apiserver scrapes) is one KS-API-409
// finding, on Calico's IPAM blocks.
func TestRecordedConflictStorm(t *testing.T) {
	fs, _ := Evaluate(report(nil, recordedAPI(t)), coreRules())
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	if len(fs) != 1 || fs[0].ID != "KS-API-409" || fs[0].Evidence[0].Labels["resource"] != "ipamblocks" {
		t.Fatalf("findings %v: %+v", ids, fs)
	}
}

// TestPodNodeNamesNodeAndPhase: KS-POD-NODE's first evidence names the slow node and the phase it is slow in
// (what the lab's slow-node scenario test reads), and only that node is an item.
func TestPodNodeNamesNodeAndPhase(t *testing.T) {
	fs, _ := Evaluate(report(nil, slowSandboxNode.result()), []Rule{podNodeRule()})
	if len(fs) != 1 || fs[0].ItemCount != 1 || fs[0].Items[0].Key != "node=n2" {
		t.Fatalf("findings %+v", fs)
	}
	if e := fs[0].Evidence[0]; e.Name != podstartup.MetricNodeSLIRatio || e.Labels["node"] != "n2" || e.Labels["phase"] != "sandbox" || e.Value < 5 {
		t.Fatalf("first evidence %+v", e)
	}
}
