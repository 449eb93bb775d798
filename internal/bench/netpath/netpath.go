// Package netpath measures the cluster's network data paths with kubeslow's own agents (case D, case B):
// the same HTTP and TCP benchmarks host->host, host->pod, pod->pod on one node and across nodes, and pod->
// ClusterIP Service, each path's ratio to host->host.
package netpath

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "net.paths"

// Metric names of the result: rules read them through these.
const (
	// MetricRatioToHost is a path's throughput over host->host's (labels path, conn).
	MetricRatioToHost = "ratio_to_host"
	// Read by the agents on the nodes and in the pods (label where, and iface/table/family).
	MetricMTU            = "mtu"
	MetricKubeProxyRules = "kube_proxy_rules"
	MetricConntrackUsage = "conntrack_usage"
	MetricNeighbourUsage = "neighbour_usage"
)

// Ports the agents serve on (HTTP, TCP tests), in the pod network and on the node for host-network agents.
const (
	httpPort = 28080
	tcpPort  = 28081
)

// Options configure the path benchmark.
type Options struct {
	// Image holds the kubeslow binary at /kubeslow (the lab's agent image on the lab).
	Image       string
	Duration    time.Duration
	Concurrency int
	// Repeats of the whole matrix (rounds over every path, so a drift of the cluster spreads over all paths).
	Repeats int
	// IngressURL is the ingress controller's address for the ingress paths (http://host:port; "": discovered
	// from the cluster's IngressClass and its controller's Service).
	IngressURL string
}

// Measurement is the path matrix benchmark.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("network paths host/pod/Service/ingress, same and other node: HTTP (keep-alive, new connections) and TCP, %s each, %d rounds", m.Opts.Duration, m.Opts.Repeats)
}

// Path is one client -> server route of the matrix.
type Path struct {
	Name   string
	Client string // client pod
	Target func(ips) string
	// TCP: the TCP tests run on this path too.
	TCP bool
	// NodePort: dial the Service's node ports instead of the agents' ports.
	NodePort bool
	// URL, when set, is the HTTP tests' URL (the ingress paths), instead of Target and the agents' port.
	URL func(ips) string
}

type ips struct {
	hostA, podSrv, svc string
	// ingress is the ingress's URL with the run's prefix ("": no ingress paths).
	ingress string
	// nodePorts of the Service (HTTP, TCP tests), reached on hostA.
	nodePortHTTP, nodePortTCP int
}

func nodeIP(n corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// releaseHostPorts deletes the named host-network pods and waits, at most hostPortsWait, until they are gone:
// a host-network server holds its ports on its node until its container has stopped, which the run's cleanup
// (deleting the namespace) does not wait for. Two bench net runs back to back on the flannel lab measured the
// second one's host->host against no server: its srv-host could not bind 28080 while the first one's was still
// terminating (1,645 connects refused, "container not found"). It runs on a context of its own: the run's may
// be cancelled already.
func releaseHostPorts(env *measure.Env, names ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), hostPortsWait)
	defer cancel()
	one := int64(1) // not 0: that removes the object at once, the container still running
	pods := env.Client.CoreV1().Pods(env.Namespace)
	for _, n := range names {
		if err := pods.Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &one}); err != nil && !apierrors.IsNotFound(err) {
			return // the run's cleanup deletes it with the namespace
		}
	}
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			if _, err := pods.Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

// hostPortsWait bounds releaseHostPorts: the pods' grace is 1 s; a kubelet that does not stop them within
// this is left to the run's cleanup.
const hostPortsWait = 30 * time.Second

// pod builds an agent pod pinned to node, labelled with its role (the Service selects srv-pod by it).
func (m *Measurement) pod(env *measure.Env, name, node string, hostNet bool, args ...string) *corev1.Pod {
	p := env.AgentPod(name, m.Opts.Image, node, args...)
	p.Labels["kubeslow.dev/role"] = name
	p.Spec.HostNetwork = hostNet
	return p
}

// Run deploys the agents, runs every path and reports.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name, Status: result.StatusPass}
	began := time.Now()
	nodes, err := measure.RealNodes(ctx, env)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to list nodes: %v", err)
		}
		return res, err
	}
	if len(nodes) == 0 {
		return res, measure.Skipf("no Ready, schedulable real node (kwok's simulated nodes carry no traffic)")
	}
	// The ingress paths need the ingress's node as the server node (its pod is the same-node backend).
	ing, noIngress := discoverIngress(ctx, env.Client, nodes, m.Opts.IngressURL)
	if noIngress == "" {
		for i, n := range nodes {
			if n.Name == ing.Node && i > 0 {
				nodes[0], nodes[i] = nodes[i], nodes[0]
			}
		}
	}
	a, b := nodes[0], nodes[0]
	if len(nodes) > 1 {
		b = nodes[1]
	}
	serve := agentproto.Serve{Listen: fmt.Sprintf("0.0.0.0:%d", httpPort), TCPListen: fmt.Sprintf("0.0.0.0:%d", tcpPort)}.Args()
	pause := agentproto.Pause{}.Args()
	pods := []*corev1.Pod{
		m.pod(env, "srv-pod", a.Name, false, serve...),
		m.pod(env, "srv-host", a.Name, true, serve...),
		m.pod(env, "cli-pod-a", a.Name, false, pause...),
		m.pod(env, "cli-host-b", b.Name, true, pause...),
	}
	if b.Name != a.Name {
		pods = append(pods, m.pod(env, "cli-pod-b", b.Name, false, pause...))
		if noIngress == "" {
			pods = append(pods, m.pod(env, "srv-pod-b", b.Name, false, serve...))
		}
	}
	for _, p := range pods {
		if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			if apierrors.IsForbidden(err) {
				return res, measure.Skipf("no permission to create pods: %v", err)
			}
			return res, fmt.Errorf("creating %s: %w", p.Name, err)
		}
	}
	defer releaseHostPorts(env, "srv-host")
	svcMeta := kube.ObjectMeta("srv", env.Namespace, env.RunID)
	// NodePort: it has a ClusterIP too, and the node ports add the host->NodePort path.
	svc, err := env.Client.CoreV1().Services(env.Namespace).Create(ctx, &corev1.Service{ObjectMeta: svcMeta, Spec: corev1.ServiceSpec{
		Type:     corev1.ServiceTypeNodePort,
		Selector: map[string]string{"kubeslow.dev/role": "srv-pod"},
		Ports: []corev1.ServicePort{{Name: "http", Port: httpPort, TargetPort: intstr.FromInt32(httpPort)},
			{Name: "tcp", Port: tcpPort, TargetPort: intstr.FromInt32(tcpPort)}},
	}}, metav1.CreateOptions{})
	if err != nil {
		return res, fmt.Errorf("creating the Service: %w", err)
	}
	if noIngress == "" {
		if err := m.createIngress(ctx, env, ing, b.Name != a.Name); err != nil {
			noIngress = err.Error()
		}
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	running, err := env.WaitRunning(ctx, names...)
	if err != nil {
		return res, fmt.Errorf("the agents: %w", err)
	}
	srvIP := running["srv-pod"].Status.PodIP
	addr := ips{hostA: nodeIP(a), podSrv: srvIP, svc: svc.Spec.ClusterIP}
	for _, sp := range svc.Spec.Ports {
		if sp.Port == httpPort {
			addr.nodePortHTTP = int(sp.NodePort)
		} else {
			addr.nodePortTCP = int(sp.NodePort)
		}
	}
	paths := []Path{
		{Name: "host->host", Client: "cli-host-b", Target: func(i ips) string { return i.hostA }, TCP: true},
		{Name: "host->pod", Client: "cli-host-b", Target: func(i ips) string { return i.podSrv }, TCP: true},
		{Name: "pod->pod same node", Client: "cli-pod-a", Target: func(i ips) string { return i.podSrv }, TCP: true},
		{Name: "host->NodePort", Client: "cli-host-b", Target: func(i ips) string { return i.hostA }, TCP: true, NodePort: true},
	}
	if b.Name != a.Name {
		paths = append(paths,
			Path{Name: "pod->pod other node", Client: "cli-pod-b", Target: func(i ips) string { return i.podSrv }, TCP: true},
			Path{Name: "pod->Service", Client: "cli-pod-b", Target: func(i ips) string { return i.svc }, TCP: true})
	} else {
		paths = append(paths, Path{Name: "pod->Service", Client: "cli-pod-a", Target: func(i ips) string { return i.svc }, TCP: true})
		res.Reason = "one real node: host->host and host->pod stay on it, and there is no pod->pod other node path"
	}
	// The ingress paths, once the routes answer from here (the client of the matrix is node B's host network).
	if noIngress == "" {
		addr.ingress = ing.URL + ingressPrefix(env.RunID)
		urls := []string{addr.ingress + "/same"}
		if b.Name != a.Name {
			urls = append(urls, addr.ingress+"/other")
		}
		if err := waitRoutes(ctx, env, time.Minute, urls...); err != nil {
			noIngress = err.Error()
		}
	}
	if noIngress == "" {
		paths = append(paths, Path{Name: PathIngressSame, Client: "cli-host-b", URL: func(i ips) string { return i.ingress + "/same" }})
		if b.Name != a.Name {
			paths = append(paths, Path{Name: PathIngressOther, Client: "cli-host-b", URL: func(i ips) string { return i.ingress + "/other" }})
		}
		res.Records = append(res.Records, result.Record{ID: "ingress", Labels: map[string]string{"url": ing.URL, "class": ing.Class,
			"controller": ing.Controller, "node": ing.Node, "via": ing.Via}})
	} else {
		res.Records = append(res.Records, result.Record{ID: "ingress", Labels: map[string]string{"skipped": noIngress}})
		if ing.URL != "" { // found, but its paths could not be measured: say so where the user reads
			res.Reason = strings.TrimPrefix(res.Reason+"; ingress paths not measured: "+noIngress, "; ")
		}
	}
	res.Records = append(res.Records, result.Record{ID: "topology", Labels: map[string]string{"server_node": a.Name, "client_node_b": b.Name,
		"host_ip": addr.hostA, "pod_ip": addr.podSrv, "service_ip": addr.svc}})
	// What the namespaces show (MTU, overlay devices, kube-proxy, conntrack, ARP): the evidence that names the
	// component when a path is slow.
	probes := []struct{ pod, where string }{{"srv-host", "node " + a.Name}, {"cli-pod-a", "pod"}}
	if b.Name != a.Name {
		probes = append(probes, struct{ pod, where string }{"cli-host-b", "node " + b.Name})
	}
	var links []nodenet.NodeLinks
	for _, pr := range probes {
		nn, err := m.probeNode(ctx, env, pr.pod)
		if node, ok := strings.CutPrefix(pr.where, "node "); ok {
			links = append(links, nodenet.NodeLinks{Node: node, Net: nn})
			if err != nil {
				links[len(links)-1] = nodenet.NodeLinks{Node: node, Why: "the node probe failed: " + err.Error()}
			}
		}
		if err != nil {
			res.Records = append(res.Records, result.Record{ID: "probe " + pr.where, Labels: map[string]string{"error": err.Error()}})
			continue
		}
		NodeNetResult(&res, pr.where, nn)
	}
	// Whether every node's uplink carries the overlay's packets (KS-NET-MTU): the facts are read already, so it
	// costs nothing, and it names the link when a pod path is capped by it.
	nodenet.OverlayFit(&res, links)
	// Where the time goes: the agents' start and the probes, then the matrix.
	res.Metrics = append(res.Metrics, result.Metric{Name: "setup_seconds", Unit: "seconds", Value: time.Since(began).Seconds()})
	matrix := time.Now()
	samples := map[string][]float64{}
	key := SampleKey
	// runPath runs one round of path p's tests.
	runPath := func(p Path) error {
		target := ""
		if p.Target != nil {
			target = p.Target(addr)
		}
		hp, tp := httpPort, tcpPort
		if p.NodePort {
			hp, tp = addr.nodePortHTTP, addr.nodePortTCP
		}
		for _, newConn := range []bool{false, true} {
			u := fmt.Sprintf("http://%s/", joinHostPort(target, hp))
			if p.URL != nil {
				u = p.URL(addr)
			}
			req := agentproto.BenchHTTP{URL: u, Concurrency: m.Opts.Concurrency, Duration: m.Opts.Duration, NewConn: newConn}
			conn := "keepalive"
			if newConn {
				conn = "new"
			}
			r, err := m.exec(ctx, env, p.Client, req)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", p.Name, conn, err)
			}
			samples[key(p.Name, "rps", conn)] = append(samples[key(p.Name, "rps", conn)], metric(r, "requests_per_second"))
			samples[key(p.Name, "latency_p99", conn)] = append(samples[key(p.Name, "latency_p99", conn)], metric(r, "latency_p99"))
			samples[key(p.Name, "latency_p50", conn)] = append(samples[key(p.Name, "latency_p50", conn)], metric(r, "latency_p50"))
		}
		if p.TCP {
			r, err := m.exec(ctx, env, p.Client, agentproto.BenchTCP{Addr: joinHostPort(target, tp), Duration: m.Opts.Duration})
			if err != nil {
				return fmt.Errorf("%s (tcp): %w", p.Name, err)
			}
			samples[key(p.Name, "stream_gbit", "stream")] = append(samples[key(p.Name, "stream_gbit", "stream")], metric(r, "stream_gbit_per_second"))
			samples[key(p.Name, "rr_latency_p99", "stream")] = append(samples[key(p.Name, "rr_latency_p99", "stream")], metric(r, "rr_latency_p99"))
		}
		return nil
	}
	for round := 0; round < m.Opts.Repeats; round++ {
		for _, p := range paths {
			if err := runPath(p); err != nil {
				return res, err
			}
		}
	}
	// Extra rounds where the spread is wide, the widest path first, within a fifth of the matrix's time: the
	// short default tests buy their speed with noise, and this spends a little of it back where it shows.
	base := time.Since(matrix)
	perPath := base / time.Duration(max(1, m.Opts.Repeats*len(paths)))
	extra := map[string]int{}
	// They also stop where the whole run would pass ExtraRoundsWall per second of test and round (100 s for the
	// default 1 s tests and 3 rounds): the ingress paths lengthen the matrix, and the default stays within 2 minutes.
	wall := time.Duration(float64(ExtraRoundsWall) * float64(m.Opts.Repeats) * m.Opts.Duration.Seconds())
	for m.Opts.Repeats > 1 && time.Since(matrix)+perPath <= base+base/5 && time.Since(began)+perPath <= wall {
		p, ok := WidestPath(paths, samples, extra, m.Opts.Repeats)
		if !ok {
			break
		}
		if err := runPath(p); err != nil {
			return res, err
		}
		extra[p.Name]++
	}
	for _, p := range paths {
		if extra[p.Name] > 0 {
			res.Metrics = append(res.Metrics, result.Metric{Name: "extra_rounds", Unit: "count", Value: float64(extra[p.Name]), Labels: map[string]string{"path": p.Name}})
		}
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: "matrix_seconds", Unit: "seconds", Value: time.Since(matrix).Seconds()})
	Summarize(&res, paths, samples)
	HopCosts(&res, samples)
	res.Metrics = append(res.Metrics, result.Metric{Name: "repeats", Unit: "count", Value: float64(m.Opts.Repeats)})
	return res, nil
}

// ExtraRoundsWall is the wall time, per second of test and per round, past which no extra round starts.
const ExtraRoundsWall = 100 * time.Second / 3

// WideSpread is the relative spread of a path's requests/s ((max - min) / median, either HTTP mode) above which
// it gets extra rounds.
const WideSpread = 0.3

// WidestPath is the path whose requests/s spread over its rounds is the widest above WideSpread, among those
// with fewer than repeats extra rounds (pure).
func WidestPath(paths []Path, samples map[string][]float64, extra map[string]int, repeats int) (Path, bool) {
	var best Path
	worst := WideSpread
	for _, p := range paths {
		if extra[p.Name] >= repeats {
			continue
		}
		for _, conn := range []string{"keepalive", "new"} {
			med, lo, hi := stats.Spread(samples[SampleKey(p.Name, "rps", conn)])
			if med > 0 && (hi-lo)/med > worst {
				best, worst = p, (hi-lo)/med
			}
		}
	}
	return best, best.Name != ""
}

// SampleKey keys the samples of one path, metric and connection mode.
func SampleKey(path, metric, conn string) string { return path + "\x00" + metric + "\x00" + conn }

// Summarize adds the medians over the repeats of every path's samples (keyed by SampleKey), with their
// spread, and each path's ratio to host->host (the first path) (pure).
func Summarize(res *result.Result, paths []Path, samples map[string][]float64) {
	base := map[string]float64{}
	for _, p := range paths {
		for _, c := range []struct{ metric, unit, conn string }{
			{"rps", "requests_per_second", "keepalive"}, {"latency_p50", "seconds", "keepalive"}, {"latency_p99", "seconds", "keepalive"},
			{"rps", "requests_per_second", "new"}, {"latency_p50", "seconds", "new"}, {"latency_p99", "seconds", "new"},
			{"stream_gbit", "gbit_per_second", "stream"}, {"rr_latency_p99", "seconds", "stream"},
		} {
			v := samples[SampleKey(p.Name, c.metric, c.conn)]
			if len(v) == 0 {
				continue
			}
			med, lo, hi := stats.Spread(v)
			l := map[string]string{"path": p.Name, "conn": c.conn}
			if c.conn == "stream" {
				l = map[string]string{"path": p.Name}
			}
			res.Metrics = append(res.Metrics, result.Metric{Name: c.metric, Unit: c.unit, Value: med, Labels: l})
			if c.metric == "rps" || c.metric == "stream_gbit" {
				res.Metrics = append(res.Metrics, result.Metric{Name: c.metric + "_min", Unit: c.unit, Value: lo, Labels: l},
					result.Metric{Name: c.metric + "_max", Unit: c.unit, Value: hi, Labels: l})
				ratio(res, base, c.metric+"_"+c.conn, p.Name, med, map[string]string{"path": p.Name, "conn": c.conn})
			}
		}
	}
}

// Hop is one hop of the data path, costed as the difference between two paths of the matrix that differ by it
// alone: the same client node and server, with and without the hop.
type Hop struct {
	Name, Path, Base string
}

// Hops are the matrix's hops, in the order a packet from another node's pod to a Service meets them: the pod
// network across nodes (veth, bridge and, with an overlay, its encapsulation: node B's pod -> node A's pod
// against node B -> node A), the Service's DNAT and conntrack (the same pods through the ClusterIP), and the
// NodePort's (node B -> node A's node port against node B -> node A: the DNAT and node A's bridge into the pod;
// not against host->pod, which crosses the overlay where there is one, while the node port is reached over the
// underlay: measured on the flannel lab, that base made the NodePort look faster than no NodePort). With an
// ingress: the ingress proxy (node B -> the ingress on node A -> a pod on node A, against node B -> node A: the
// controller's node port or load balancer, the proxy in user space and its connection to the pod; a proxy like
// Traefik balances over the Service's endpoints itself, so kube-proxy is not on its way to the pod), and the
// backend on another node behind it (the same through the proxy to node B's pod, against node A's pod).
var Hops = []Hop{
	{Name: "pod network across nodes (veth, bridge, overlay)", Path: "pod->pod other node", Base: "host->host"},
	{Name: "Service (kube-proxy DNAT, conntrack)", Path: "pod->Service", Base: "pod->pod other node"},
	{Name: "NodePort (kube-proxy DNAT, conntrack, the node's bridge into the pod)", Path: "host->NodePort", Base: "host->host"},
	{Name: HopIngress, Path: PathIngressSame, Base: "host->host"},
	{Name: HopIngressOther, Path: PathIngressOther, Base: PathIngressSame},
}

// The ingress hops' names.
const (
	HopIngress      = "ingress proxy (its node port, the proxy, its connection to the pod)"
	HopIngressOther = "backend on another node behind the ingress (the pod network across nodes from the proxy)"
)

// Metrics of the hop costs: how many times the hop divides throughput (base over path) and multiplies the latency
// percentiles (path over base), by connection mode (labels hop, path, base, conn).
const (
	MetricHopThroughputCost = "hop_throughput_cost"
	MetricHopP50Cost        = "hop_p50_cost"
	MetricHopP99Cost        = "hop_p99_cost"
)

// HopCosts adds each hop's cost, from the medians over the rounds, to the result, and one record per connection
// mode that reads as "pod network across nodes 1.3x, Service 2.1x" with the path against host->host (pure).
func HopCosts(res *result.Result, samples map[string][]float64) {
	med := func(path, metric, conn string) float64 {
		m, _, _ := stats.Spread(samples[SampleKey(path, metric, conn)])
		return m
	}
	for _, c := range []struct{ conn, rps, p50, p99 string }{
		{"keepalive", "rps", "latency_p50", "latency_p99"}, {"new", "rps", "latency_p50", "latency_p99"}, {"stream", "stream_gbit", "", "rr_latency_p99"},
	} {
		var parts []string
		for _, h := range Hops {
			base, path := med(h.Base, c.rps, c.conn), med(h.Path, c.rps, c.conn)
			if base <= 0 || path <= 0 {
				continue
			}
			l := map[string]string{"hop": h.Name, "path": h.Path, "base": h.Base, "conn": c.conn}
			res.Metrics = append(res.Metrics, result.Metric{Name: MetricHopThroughputCost, Unit: "ratio", Value: base / path, Labels: l})
			text := fmt.Sprintf("%s %.2fx", h.Name, base/path)
			for _, q := range []struct{ metric, name, label string }{{c.p50, MetricHopP50Cost, "p50"}, {c.p99, MetricHopP99Cost, "p99"}} {
				if q.metric == "" {
					continue
				}
				if b, p := med(h.Base, q.metric, c.conn), med(h.Path, q.metric, c.conn); b > 0 && p > 0 {
					res.Metrics = append(res.Metrics, result.Metric{Name: q.name, Unit: "ratio", Value: p / b, Labels: l})
					text += fmt.Sprintf(", %s %.2fx", q.label, p/b)
				}
			}
			if host := med("host->host", c.rps, c.conn); host > 0 {
				text += fmt.Sprintf(" (%s at %.2fx host->host's throughput)", h.Path, path/host)
			}
			parts = append(parts, text)
		}
		if len(parts) > 0 {
			res.Records = append(res.Records, result.Record{ID: "hops " + c.conn, Labels: map[string]string{"conn": c.conn, "hops": strings.Join(parts, "; ")}})
		}
	}
}

// ratio records a path's value against host->host's (the first path).
func ratio(res *result.Result, base map[string]float64, key, path string, v float64, l map[string]string) {
	if path == "host->host" {
		base[key] = v
	}
	if b := base[key]; b > 0 {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricRatioToHost, Unit: "ratio", Value: v / b, Labels: l})
	}
}

func joinHostPort(h string, p int) string {
	if strings.Contains(h, ":") {
		return fmt.Sprintf("[%s]:%d", h, p)
	}
	return fmt.Sprintf("%s:%d", h, p)
}

func metric(r *result.Result, name string) float64 {
	for _, m := range r.Metrics {
		if m.Name == name && len(m.Labels) == 0 {
			return m.Value
		}
	}
	return 0
}

// exec runs a kubeslow client benchmark in an agent pod and decodes its one result.
func (m *Measurement) exec(ctx context.Context, env *measure.Env, pod string, req agentproto.Call[*result.Result]) (*result.Result, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*m.Opts.Duration+time.Minute)
	defer cancel()
	return agentproto.Exec(cctx, env.Config, env.Client, env.Namespace, pod, req)
}
