// Package nodeagent is the node sweep's agent half (issue 15): kubeslow's own image as a DaemonSet on every
// real node, each pod reporting its node's kernel-level facts once (agent.NodeHost), read back through the
// pods' logs: one small GET per node, with bounded concurrency.
package nodeagent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "nodes.agent"

// Options configure the sweep.
type Options struct {
	// Image holds the kubeslow binary at /kubeslow; empty skips the sweep.
	Image string
	// ProbeBytes is each directory's sync-write probe (a few MiB at most); Window the agents' watch (D state,
	// pressure, conntrack growth, DNS queries), from each agent's start.
	ProbeBytes int64
	Window     time.Duration
	// Timeout bounds the wait for the agents' reports; nodes whose agent did not report by then are listed.
	Timeout time.Duration
	// Concurrency bounds the log reads in flight.
	Concurrency int
	// Kept, when set, is the namespace of a node agent DaemonSet kept running (KeptDaemonSet: `kubeslow watch
	// install --node-agent`): the measurement reads each agent's newest report from its log and creates nothing.
	Kept string
}

// noRealNode skips the sweep of a cluster whose agent DaemonSet schedules no pod.
func noRealNode() error {
	return measure.Skipf("no real node to run the agent on (simulated nodes have no kernel)")
}

// MaxWindow is the longest watch the agent takes (its --window).
const MaxWindow = time.Minute

// DefaultOptions are the sweep's defaults.
func DefaultOptions(image string) Options {
	return Options{Image: image, ProbeBytes: 1 << 20, Window: 2 * time.Second, Timeout: 3 * time.Minute, Concurrency: 16}
}

// Measurement is the node agent sweep.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return "node agent on every real node: neighbour table, conntrack, kernel log, D state, PSI, disks under the kubelet and runtime with a sync-write probe, every pod's DNS queries (eBPF)"
}

// In the agent pod: the host's /proc, /sys and /dev/kmsg under hostRoot, the probe directory (an emptyDir,
// which lives under the kubelet's root dir) and the ready file on the container's writable layer (which
// lives under the runtime's directory, where the runtime probe writes too).
const (
	hostRoot  = "/host"
	probeDir  = "/probe"
	readyFile = "/ready"
	dsName    = "kubeslow-node-agent"
)

// Request is the agent's command line as the DaemonSet runs it.
func (m *Measurement) Request() agentproto.NodeHost {
	return agentproto.NodeHost{HostRoot: hostRoot, KubeletDir: probeDir, RuntimeDir: "/", ProbeBytes: m.Opts.ProbeBytes, Window: m.Opts.Window, ReadyFile: readyFile}
}

// DaemonSet is the agent's DaemonSet in namespace ns for run runID.
func (m *Measurement) DaemonSet(ns, runID string) *appsv1.DaemonSet {
	labels := kube.RunLabels(runID)
	labels["kubeslow.dev/role"] = "node-agent"
	return daemonSet(ns, labels, m.Opts.Image, m.Request())
}

// daemonSet is the node agent's DaemonSet in namespace ns, labelled (and selecting its pods by) labels, running
// image with req.
//
// Privileges: host network (the node's network namespace: its neighbour table, conntrack and sysctls);
// the host's /proc and /sys mounted read-only; /dev/kmsg read-only, which needs a privileged container (the
// device cgroup refuses it otherwise, and reading it needs CAP_SYSLOG under kernel.dmesg_restrict=1), as
// node-problem-detector's DaemonSet does. No host PID namespace, no host path written: the sync probes write
// into an emptyDir and the container's own layer, a few MiB, deleted after.
func daemonSet(ns string, labels map[string]string, image string, req agentproto.NodeHost) *appsv1.DaemonSet {
	yes := true
	hp := func(name, path string, t corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	zero := int64(0)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: dsName, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet, TerminationGracePeriodSeconds: &zero,
					AutomountServiceAccountToken: new(bool),
					Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: kube.SimulatedNodeLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{kube.SimulatedNodeLabelValue}}}}}}}},
					Volumes: []corev1.Volume{hp("proc", "/proc", corev1.HostPathDirectory), hp("sys", "/sys", corev1.HostPathDirectory),
						hp("kmsg", "/dev/kmsg", corev1.HostPathCharDev),
						{Name: "probe", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(16<<20, resource.BinarySI)}}}},
					Containers: []corev1.Container{{
						Name: "agent", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: req.Args(),
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "proc", MountPath: hostRoot + "/proc", ReadOnly: true},
							{Name: "sys", MountPath: hostRoot + "/sys", ReadOnly: true}, {Name: "kmsg", MountPath: hostRoot + "/dev/kmsg", ReadOnly: true},
							{Name: "probe", MountPath: probeDir}},
						SecurityContext: &corev1.SecurityContext{Privileged: &yes},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: req.Ready()}},
							PeriodSeconds: 2, TimeoutSeconds: 5},
					}},
				},
			},
		},
	}
}

// Window implements measure.Observer: the agents' watch (D state, pressure and conntrack growth, every pod's
// DNS queries), which the runner starts with the other observers so that it spans the run's load.
func (m *Measurement) Window() time.Duration { return m.Opts.Window }

// Run is the sweep on its own (kubeslow nodes): Start, then Gather as soon as the agents have reported (each
// agent watches its own Window before it does).
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	obs, err := m.Start(ctx, env)
	if err != nil {
		return result.Result{Name: Name}, err
	}
	return obs.Gather(ctx)
}

// Start implements measure.Observer: it creates the DaemonSet, whose agents watch their node for Window from
// their own start and then report; with Kept, it reads the kept agents at the window's end instead.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	if m.Opts.Kept != "" {
		return &kept{m: m, env: env}, nil
	}
	if m.Opts.Image == "" {
		return nil, measure.Skipf("%s (the lab's is used with --lab)", agentimage.NoImage)
	}
	ds := m.DaemonSet(env.Namespace, env.RunID)
	dsc := env.Client.AppsV1().DaemonSets(env.Namespace)
	if _, err := dsc.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, measure.Skipf("no permission to create DaemonSets: %v", err)
		}
		return nil, fmt.Errorf("creating the node agent DaemonSet: %w", err)
	}
	return &sweep{m: m, env: env, ds: ds}, nil
}

// sweep is a started node agent DaemonSet.
type sweep struct {
	m   *Measurement
	env *measure.Env
	ds  *appsv1.DaemonSet
}

// Sample implements measure.Observation: the agents sample their nodes themselves.
func (*sweep) Sample(context.Context) {}

// Gather implements measure.Observation: it waits until every scheduled agent is Ready (its report written)
// or the time-out, reads each report from its pod's log and deletes the DaemonSet.
func (s *sweep) Gather(ctx context.Context) (result.Result, error) {
	m, env, ds := s.m, s.env, s.ds
	res := result.Result{Name: Name, Status: result.StatusPass}
	dsc := env.Client.AppsV1().DaemonSets(env.Namespace)
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		bg := metav1.DeletePropagationBackground
		_ = dsc.Delete(dctx, ds.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	}()
	// One GET of the DaemonSet per poll: its status counts the scheduled and Ready agents for every node.
	// The wait ends at Timeout, or sooner at the end of the run's budget.
	var last *appsv1.DaemonSet
	wctx, stop, bound := env.BoundContext(ctx, m.Opts.Timeout)
	defer stop()
	err := wait.PollUntilContextCancel(wctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := dsc.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = d
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.DesiredNumberScheduled > 0 && s.NumberReady == s.DesiredNumberScheduled, nil
	})
	cut := err != nil && measure.BudgetEnded(wctx) && ctx.Err() == nil
	switch {
	case cut && last == nil:
		return res, measure.Skipf("the node agent DaemonSet not read yet%s", bound.Note())
	case err != nil && last == nil:
		return res, fmt.Errorf("waiting for the node agents: %w", err)
	}
	if last.Status.DesiredNumberScheduled == 0 {
		return res, noRealNode()
	}
	hosts, failures, err := m.collect(ctx, env, ds, nil)
	if err != nil {
		return res, err
	}
	res = analyzeHosts(ctx, env, hosts, failures, last.Status.DesiredNumberScheduled)
	if cut && len(failures) > 0 {
		// Agents kubeslow stopped waiting for: its own budget, not the nodes, left them unread.
		res.Reason += bound.Note()
		if res.Status == result.StatusError {
			res.Status = result.StatusSkip
		}
	}
	return res, nil
}

// analyzeHosts is the reports' result: which nodes hold the pause image and which pods the traced clients are
// (one paginated LIST each), then Analyze, with the agents scheduled.
func analyzeHosts(ctx context.Context, env *measure.Env, hosts []agent.NodeHost, failures map[string]string, scheduled int32) result.Result {
	// The nodes' status lists the images each holds: one paginated LIST, whether the pause image is there.
	nodes, err := env.ListNodes(ctx)
	if err == nil {
		MarkSandboxPresence(hosts, nodes)
	}
	// The pods whose DNS queries and connects the agents saw, by IP: one paginated LIST of the cluster's pods.
	var dnsNote string
	if on := dnsNodes(hosts); len(on) > 0 {
		pods, err := ListNodePods(ctx, env, on)
		if err != nil {
			dnsNote = "DNS clients not named by pod (" + err.Error() + ")"
		}
		MarkDNSClients(hosts, pods, nodes)
	}
	res := Analyze(hosts, failures)
	if dnsNote != "" {
		res.Reason = strings.TrimPrefix(res.Reason+"; "+dnsNote, "; ")
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: MetricAgentsScheduled, Unit: "count", Value: float64(scheduled)})
	return res
}

// collect lists the agent pods of ds (one LIST) and reads each Ready pod's report from its log, at most
// Concurrency at a time; a pod that is not Ready or whose report cannot be read is a failure by node. With
// kept (an agent kept running) it reads the newest report of the log's last lines, and kept says whether it is
// fresh enough (a failure with why, otherwise).
func (m *Measurement) collect(ctx context.Context, env *measure.Env, ds *appsv1.DaemonSet, kept func(*agent.NodeHost) error) ([]agent.NodeHost, map[string]string, error) {
	pods, err := env.Client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector)})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the node agents: %w", err)
	}
	var (
		mu       sync.Mutex
		hosts    []agent.NodeHost
		failures = map[string]string{}
		g        errgroup.Group
	)
	g.SetLimit(max(1, m.Opts.Concurrency))
	limit := int64(1 << 20)
	for i := range pods.Items {
		p := &pods.Items[i]
		node := p.Spec.NodeName
		if !kube.PodReady(p) {
			mu.Lock() // the reports of earlier pods are being read
			failures[node] = fmt.Sprintf("agent %s not Ready (%s)", p.Name, podWhy(p))
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			opts := &corev1.PodLogOptions{LimitBytes: &limit}
			if kept != nil {
				opts.TailLines = &keptTail
			}
			b, err := env.Client.CoreV1().Pods(ds.Namespace).GetLogs(p.Name, opts).DoRaw(lctx)
			var h *agent.NodeHost
			switch {
			case err == nil && kept != nil:
				if h, err = (agentproto.NodeHost{}).DecodeLast(b); err == nil {
					err = kept(h)
				}
			case err == nil:
				h, err = agentproto.NodeHost{}.Decode(b)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures[node] = fmt.Sprintf("report of %s: %v", p.Name, err)
				return nil
			}
			if h.Node == "" {
				h.Node = node
			}
			hosts = append(hosts, *h)
			return nil
		})
	}
	_ = g.Wait()
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Node < hosts[j].Node })
	return hosts, failures, nil
}

// dnsNodes are the nodes whose agent saw DNS or TCP-connect clients.
func dnsNodes(hosts []agent.NodeHost) map[string]bool {
	on := map[string]bool{}
	for _, h := range hosts {
		if h.DNS != nil && len(h.DNS.Clients) > 0 || h.Connects != nil && len(h.Connects.Clients) > 0 {
			on[h.Node] = true
		}
	}
	return on
}

func podWhy(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return strings.TrimSpace(w.Reason + " " + w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("exited %d %s", t.ExitCode, t.Reason)
		}
	}
	return string(p.Status.Phase)
}
