// Package cpnode is the node tier of the control-plane signals (issue 27): kubeslow's agent on each
// control-plane node (host PID and network namespaces) finds kube-apiserver, etcd, kube-scheduler and
// kube-controller-manager by their processes, reads their flags, CPU, run-queue wait, cgroup quota,
// throttling and pressure, scrapes etcd's, the scheduler's and the controller-manager's /metrics on the
// node's loopback, and streams the apiserver's audit log. The agents are driven by exec through the
// apiserver; they open no port.
//
// Each agent is a pod bound to its node by name (spec.nodeName), not a DaemonSet's: neither the
// controller-manager nor the scheduler stands between kubeslow and the agent, and those are the components a
// sick control plane may have starved or lost.
//
// A Session deploys the agents once (Start) and answers any number of calls until Close: the measurements
// that read the node tier (etcd health, control-plane CPU, the audit log) share one. Where no agent can run
// on a control-plane node the calls fail with an *Unreachable saying why and what would fix it.
package cpnode

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Node-role labels (and the taints of the same keys) that kubeadm, k3s and rke2 put on control-plane nodes.
const (
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
	LabelMaster       = "node-role.kubernetes.io/master"
)

// Options configure the agents.
type Options struct {
	// Image holds the kubeslow binary at /kubeslow.
	Image string
	// Nodes are the nodes to run on; empty: every node labelled LabelControlPlane or LabelMaster.
	Nodes []string
	// Interval is the CPU sampling interval of ControlPlane.
	Interval time.Duration
	// Timeout bounds the wait for the agents to run.
	Timeout time.Duration
	// MetricsAccess binds the agents' service account to the ClusterRole system:monitoring for the
	// session (a ClusterRoleBinding deleted by Close), which kube-controller-manager and kube-scheduler ask
	// of a bearer token on /metrics. Without it they answer 403 and Scrape says so. Creating the binding
	// needs "create clusterrolebindings" and holding system:monitoring's rights (or "bind").
	MetricsAccess bool
	// MaxScrapeBytes bounds each /metrics body (default 8 MiB).
	MaxScrapeBytes int64
}

// DefaultOptions are the defaults for image.
func DefaultOptions(image string) Options {
	return Options{Image: image, Interval: 2 * time.Second, Timeout: 2 * time.Minute, MaxScrapeBytes: 8 << 20}
}

// Reason is why the node tier is out of reach.
type Reason string

// Reasons the node tier is out of reach.
const (
	NoImage             Reason = "no agent image"
	NoControlPlaneNodes Reason = "no control-plane node"
	Forbidden           Reason = "forbidden"
	NotScheduled        Reason = "agent not scheduled"
	NotRunning          Reason = "agent not running"
	NoComponents        Reason = "no control-plane process on the nodes"
	NotServed           Reason = "signal not served"
)

// Unreachable is the node tier's "could not measure": which reason, the detail, and the fix.
type Unreachable struct {
	Reason Reason
	Detail string
	Fix    string
}

func (u *Unreachable) Error() string {
	s := u.Detail
	if !strings.HasPrefix(s, string(u.Reason)) { // a detail that says the reason itself is not said twice
		s = string(u.Reason) + ": " + s
	}
	if u.Fix != "" {
		s += " (fix: " + u.Fix + ")"
	}
	return s
}

// Component is one control-plane process found by the agent on its node.
type Component struct {
	Node string `json:"node"`
	// Name is agent.CompAPIServer, CompEtcd, CompScheduler, CompController, CompK3s or CompRKE2.
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Flags are the flags kubeslow reads (agent.ReadFlags); for k3s/rke2 as "<component>:<flag>".
	Flags         map[string]string `json:"flags"`
	Manifest      string            `json:"manifest,omitempty"`
	ManifestFlags map[string]string `json:"manifest_flags,omitempty"`
	// CPU: seconds, rate (cores), run-queue wait and its rate, threads.
	CPU agent.ProcCPU `json:"cpu"`
	// Cgroup: path, the tightest quota above it, throttling there (only where a limit exists), its PSI.
	Cgroup *agent.CgroupCPU `json:"cgroup,omitempty"`
	// AllowedCPUs are the CPUs it may run on; NodeCores the node's; NodePSI the node's cpu pressure.
	AllowedCPUs int            `json:"allowed_cpus,omitempty"`
	NodeCores   int            `json:"node_cores"`
	NodePSI     *agent.PSIPair `json:"node_psi,omitempty"`
	Unread      []string       `json:"unread,omitempty"`
}

// Flag is the component's flag (for k3s/rke2: the one passed to the embedded comp).
func (c Component) Flag(comp, flag string) (string, bool) {
	ac := agent.Component{Name: c.Name, Flags: c.Flags}
	return ac.FlagOf(comp, flag)
}

// Embeds reports whether the process is comp or (k3s) runs it.
func (c Component) Embeds(comp string) bool {
	return (&agent.Component{Name: c.Name}).Embeds(comp)
}

// NodeReport is one agent's answer.
type NodeReport struct {
	Node   string              `json:"node"`
	Report *agent.ControlPlane `json:"report,omitempty"`
	Err    string              `json:"error,omitempty"`
}

// Session is the agents deployed on the control-plane nodes.
type Session struct {
	env  *measure.Env
	opts Options
	// pods by node: the Running agents.
	pods map[string]string
	// missing: target nodes without a running agent, and why.
	missing map[string]string
	// created are the agent pods this session created (Close deletes them).
	created []string
	crb     string
	roots   agentproto.CPRoots
}

// In the agent pod: the host's /proc and /sys/fs/cgroup, read-only.
const (
	hostRoot = "/host"
	podName  = "kubeslow-cp-agent"
	saName   = "kubeslow-cp-agent"
)

// Permissions are what a session asks of the API server (MetricsAccess adds the binding's).
func Permissions() []measure.Permission {
	return []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the control-plane nodes the agent runs on"},
		{Verbs: []string{"create", "delete", "list"}, Resource: "pods", Reason: "the control-plane agent pods, one bound to each control-plane node"},
		{Verbs: []string{"create"}, Resource: "pods/exec", Reason: "the agent's answers (processes, /metrics from the node's loopback, the audit log)"},
	}
}

// MetricsAccessPermissions are what Options.MetricsAccess adds.
func MetricsAccessPermissions() []measure.Permission {
	return []measure.Permission{
		{Verbs: []string{"create"}, Resource: "serviceaccounts", Reason: "the agent's identity for kube-controller-manager's and kube-scheduler's /metrics"},
		{Verbs: []string{"create", "delete"}, Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", Reason: "binding the agent's service account to system:monitoring for the run"},
	}
}

// Labels are the agent pods' labels for run runID (the run's, so that `kubeslow cleanup` finds them).
func Labels(runID string) map[string]string {
	labels := kube.RunLabels(runID)
	labels["kubeslow.dev/role"] = "cp-agent"
	return labels
}

// Pod is the agent's pod in namespace ns for run runID, bound to node (spec.nodeName: no scheduler, no
// controller), as service account sa ("": the namespace's default).
//
// Privileges, each for one reason: the host's PID namespace (hostPID: to see the control-plane processes,
// their threads' schedstat and, through /proc/<pid>/root, the apiserver's audit log and the kubelet's
// manifests as those processes see them); the host's network namespace (hostNetwork: etcd's metrics, the
// scheduler and the controller-manager listen on the node's 127.0.0.1, and the network namespace tells this
// node's processes from another's); CAP_SYS_PTRACE (reading another root process's /proc/<pid>/ns/net and
// /proc/<pid>/root is a ptrace-read access check) and CAP_DAC_READ_SEARCH (reading files whoever owns them)
// with every other capability dropped; AppArmor unconfined (the runtime's default profile refuses ptrace
// reads of processes outside the container); the host's /proc and /sys/fs/cgroup mounted read-only; a
// read-only root filesystem. No host directory is mounted for the static-pod manifests: they are read
// through the kubelet's and pid 1's /proc/<pid>/root, since a hostPath of a directory a node lacks would
// create it there (or, typed, keep the pod from starting). The service-account token is mounted for the
// scrapes of kube-controller-manager and kube-scheduler, which authorize /metrics by it. The tolerations are
// the control-plane taints' (a pod bound by name skips the scheduler's taint check, but the kubelet refuses,
// and the taint manager evicts, a pod that does not tolerate a NoExecute taint; Start leaves out a node with
// a taint they do not cover, as a DaemonSet would).
func Pod(ns, runID, image, node, sa string) *corev1.Pod {
	hp := func(name, path string) corev1.Volume {
		t := corev1.HostPathDirectory
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	zero, root, yes, no := int64(0), int64(0), true, false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: podName + "-", Namespace: ns, Labels: Labels(runID)},
		Spec: corev1.PodSpec{
			NodeName:    node,
			HostNetwork: true, HostPID: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet, TerminationGracePeriodSeconds: &zero,
			RestartPolicy:      corev1.RestartPolicyAlways,
			ServiceAccountName: sa, AutomountServiceAccountToken: &yes,
			Tolerations: []corev1.Toleration{
				{Key: LabelControlPlane, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: LabelMaster, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				// k3s and rke2 servers may carry CriticalAddonsOnly=true:NoExecute.
				{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
			},
			Volumes: []corev1.Volume{hp("proc", "/proc"), hp("cgroup", "/sys/fs/cgroup")},
			Containers: []corev1.Container{{
				Name: "agent", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: agentproto.Pause{}.Args(),
				Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "proc", MountPath: hostRoot + "/proc", ReadOnly: true},
					{Name: "cgroup", MountPath: hostRoot + "/sys/fs/cgroup", ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: &root, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities:    &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}},
					SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
			}},
		},
	}
}

// Roots are where the agent pod reaches the host.
var Roots = agentproto.CPRoots{Proc: hostRoot + "/proc", Cgroup: hostRoot + "/sys/fs/cgroup"}

// isControlPlane reports whether n carries a control-plane role label.
func isControlPlane(n *corev1.Node) bool {
	_, cp := n.Labels[LabelControlPlane]
	_, m := n.Labels[LabelMaster]
	return cp || m
}

// Start deploys the agents and waits until each target node runs one, or Timeout. It fails with an
// *Unreachable when no agent runs on any target node; nodes without one are listed by Missing.
func Start(ctx context.Context, env *measure.Env, o Options) (*Session, error) {
	if o.Image == "" {
		return nil, &Unreachable{Reason: NoImage, Detail: agentimage.NoImage}
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.MaxScrapeBytes <= 0 {
		o.MaxScrapeBytes = 8 << 20
	}
	nodes, err := env.ListNodes(ctx)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, &Unreachable{Reason: Forbidden, Detail: err.Error(), Fix: "grant list nodes (kubeslow rbac)"}
		}
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	targets := map[string]*corev1.Node{}
	for i := range nodes {
		n := &nodes[i]
		if (len(o.Nodes) == 0 && isControlPlane(n)) || contains(o.Nodes, n.Name) {
			targets[n.Name] = n
		}
	}
	if len(targets) == 0 {
		if len(o.Nodes) > 0 {
			return nil, &Unreachable{Reason: NoControlPlaneNodes, Detail: fmt.Sprintf("none of the nodes %v exists", o.Nodes)}
		}
		return nil, &Unreachable{Reason: NoControlPlaneNodes,
			Detail: fmt.Sprintf("none of the %d nodes is labelled %s or %s: the control plane runs outside the cluster's nodes (a managed control plane: EKS, GKE, AKS)", len(nodes), LabelControlPlane, LabelMaster),
			Fix:    "the node tier cannot reach a managed control plane: read the API tier, or the provider's control-plane logs and metrics (EKS: control-plane logging to CloudWatch; GKE: Cloud Logging and control-plane metrics; AKS: diagnostic settings)"}
	}
	s := &Session{env: env, opts: o, pods: map[string]string{}, missing: map[string]string{}, roots: Roots}
	for name, n := range targets {
		if why := untolerated(n); why != "" {
			s.missing[name] = why
		}
	}
	sa := ""
	if o.MetricsAccess {
		if sa, err = s.bindMetrics(ctx); err != nil {
			env.Log.Warn("control-plane agent: no metrics access", "error", err)
			sa = ""
		}
	}
	// Bound to the nodes found by name (an affinity on the role labels would also bring the apiserver's warning
	// that node-role.kubernetes.io/master is deprecated into the user's output).
	names := make([]string, 0, len(targets))
	for name := range targets {
		if _, out := s.missing[name]; !out {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	pc := env.Client.CoreV1().Pods(env.Namespace)
	for _, name := range names {
		p, err := pc.Create(ctx, Pod(env.Namespace, env.RunID, o.Image, name, sa), metav1.CreateOptions{})
		switch {
		case apierrors.IsForbidden(err) && len(s.created) == 0:
			s.Close(ctx)
			return nil, &Unreachable{Reason: Forbidden, Detail: err.Error(), Fix: "grant create pods (kubeslow rbac)"}
		case err != nil && ctx.Err() != nil:
			s.Close(ctx)
			return nil, ctx.Err()
		case err != nil:
			// A policy engine or PodSecurity may refuse hostPID/hostNetwork pods: said for that node.
			s.missing[name] = fmt.Sprintf("its agent pod was not created: %v", err)
		default:
			s.created = append(s.created, p.Name)
		}
	}
	sel := labels.SelectorFromSet(Labels(env.RunID)).String()
	var last []corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		pl, err := pc.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		last = pl.Items
		running := 0
		for _, p := range last {
			if targets[p.Spec.NodeName] != nil && p.Status.Phase == corev1.PodRunning && allStarted(&p) {
				running++
			}
		}
		return running >= len(targets)-len(s.missing), nil
	})
	if err != nil && ctx.Err() != nil {
		s.Close(ctx)
		return nil, ctx.Err()
	}
	for _, p := range last {
		if targets[p.Spec.NodeName] == nil || p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodRunning && allStarted(&p) {
			s.pods[p.Spec.NodeName] = p.Name
			delete(s.missing, p.Spec.NodeName)
		} else if _, ok := s.missing[p.Spec.NodeName]; !ok {
			s.missing[p.Spec.NodeName] = fmt.Sprintf("agent %s not running (%s)", p.Name, podWhy(&p))
		}
	}
	for name := range targets {
		if _, ok := s.pods[name]; !ok {
			if _, ok := s.missing[name]; !ok {
				s.missing[name] = "no agent pod of this run is on it"
			}
		}
	}
	if len(s.pods) == 0 {
		s.Close(ctx)
		return nil, &Unreachable{Reason: NotRunning, Detail: "no control-plane agent runs: " + s.missingText(),
			Fix: "let kubeslow's namespace run privileged pods (pod-security.kubernetes.io/enforce=privileged) and tolerate the nodes' taints, or read the API tier"}
	}
	return s, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// untolerated says which taint of n the agent does not tolerate ("" when none).
func untolerated(n *corev1.Node) string {
	tol := Pod("", "", "", "", "").Spec.Tolerations
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		// The node's conditions as taints: a pod bound by name skips the NoSchedule ones, and the NoExecute
		// ones (not-ready, unreachable) get the tolerations the apiserver's DefaultTolerationSeconds adds.
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			continue
		}
		ok := false
		for _, tl := range tol {
			if tolerates(tl, t) {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("the agent does not tolerate its taint %s=%s:%s", t.Key, t.Value, t.Effect)
		}
	}
	return ""
}

// tolerates is the scheduler's toleration match (Exists or Equal; an empty key with Exists matches all).
func tolerates(tl corev1.Toleration, t corev1.Taint) bool {
	if tl.Effect != "" && tl.Effect != t.Effect {
		return false
	}
	if tl.Key == "" {
		return tl.Operator == corev1.TolerationOpExists
	}
	if tl.Key != t.Key {
		return false
	}
	return tl.Operator == corev1.TolerationOpExists || tl.Value == t.Value
}

// allStarted: every container runs, and the pod is not going away (a previous session's pod of the same
// labels may still be terminating).
func allStarted(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

func podWhy(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
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

// bindMetrics creates the agent's service account and binds it to system:monitoring; it returns the
// account's name.
func (s *Session) bindMetrics(ctx context.Context) (string, error) {
	labels := kube.RunLabels(s.env.RunID)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saName, Namespace: s.env.Namespace, Labels: labels}}
	if _, err := s.env.Client.CoreV1().ServiceAccounts(s.env.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-cp-agent-" + s.env.RunID, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:monitoring"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: s.env.Namespace}}}
	if _, err := s.env.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	s.crb = crb.Name
	return saName, nil
}

// Close deletes the agent pods this session created (and the metrics binding).
func (s *Session) Close(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	zero := int64(0)
	for _, name := range s.created {
		_ = s.env.Client.CoreV1().Pods(s.env.Namespace).Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	s.created = nil
	if s.crb != "" {
		_ = s.env.Client.RbacV1().ClusterRoleBindings().Delete(dctx, s.crb, metav1.DeleteOptions{})
		s.crb = ""
	}
}

// Nodes are the nodes with a running agent, sorted.
func (s *Session) Nodes() []string {
	out := make([]string, 0, len(s.pods))
	for n := range s.pods {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Missing are the target nodes without a running agent, with the reason.
func (s *Session) Missing() map[string]string { return s.missing }

func (s *Session) missingText() string {
	var parts []string
	for n, why := range s.missing {
		parts = append(parts, n+": "+why)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func (s *Session) pod(node string) (string, error) {
	p, ok := s.pods[node]
	if !ok {
		why := s.missing[node]
		if why == "" {
			why = "not a node the session runs on"
		}
		return "", &Unreachable{Reason: NotRunning, Detail: fmt.Sprintf("no agent on node %s: %s", node, why)}
	}
	return p, nil
}

// Reports asks every agent for its node's control plane (agent.ControlPlane), in parallel.
func (s *Session) Reports(ctx context.Context) []NodeReport {
	var (
		mu  sync.Mutex
		out []NodeReport
		g   errgroup.Group
	)
	g.SetLimit(8)
	for node, pod := range s.pods {
		g.Go(func() error {
			cp, err := agentproto.Exec(ctx, s.env.Config, s.env.Client, s.env.Namespace, pod, agentproto.ControlPlane{Roots: s.roots, Interval: s.opts.Interval})
			r := NodeReport{Node: node, Report: cp}
			if err != nil {
				r.Err = err.Error()
			}
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// ControlPlane is the control-plane components on the session's nodes. It fails with an *Unreachable
// (NoComponents) when the agents found none: the detail says what each saw elsewhere (processes in another
// network namespace, e.g. a control plane run outside every node) and what it could not read.
func (s *Session) ControlPlane(ctx context.Context) ([]Component, error) {
	return Components(s.Reports(ctx))
}

// Components flattens the agents' reports; see Session.ControlPlane.
func Components(reports []NodeReport) ([]Component, error) {
	var out []Component
	var notes []string
	for _, r := range reports {
		if r.Err != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", r.Node, r.Err))
			continue
		}
		cp := r.Report
		for _, c := range cp.Components {
			out = append(out, Component{Node: r.Node, Name: c.Name, PID: c.PID, Flags: c.Flags, Manifest: c.Manifest, ManifestFlags: c.ManifestFlags,
				CPU: c.CPU, Cgroup: c.Cgroup, AllowedCPUs: c.AllowedCPUs, NodeCores: cp.Cores, NodePSI: cp.PSI, Unread: c.Unread})
		}
		if len(cp.Components) == 0 {
			n := fmt.Sprintf("%s: no control-plane process in its network namespace", r.Node)
			if len(cp.Elsewhere) > 0 {
				n += fmt.Sprintf(" (seen in other network namespaces, not claimed: %v)", cp.Elsewhere)
			}
			if len(cp.Unread) > 0 {
				n += "; unread: " + strings.Join(cp.Unread, "; ")
			}
			notes = append(notes, n)
		}
	}
	if len(out) == 0 {
		return nil, &Unreachable{Reason: NoComponents, Detail: strings.Join(notes, "; "),
			Fix: "the control plane does not run on these nodes (managed, or outside the cluster): read the API tier"}
	}
	return out, nil
}

// Scrape is comp's /metrics (agent.CompEtcd, CompController or CompScheduler) from node's agent, at most
// Options.MaxScrapeBytes. A body that is not a 200 answer is an *Unreachable (NotServed) with the
// agent's reason (e.g. 403: the token needs system:monitoring; Options.MetricsAccess binds it).
func (s *Session) Scrape(ctx context.Context, node, comp string) (agentproto.Scraped, error) {
	pod, err := s.pod(node)
	if err != nil {
		return agentproto.Scraped{}, err
	}
	sc, err := agentproto.Exec(ctx, s.env.Config, s.env.Client, s.env.Namespace, pod,
		agentproto.CPScrape{Roots: s.roots, Component: comp, MaxBytes: s.opts.MaxScrapeBytes, Timeout: 10 * time.Second})
	if err != nil {
		return sc, err
	}
	if sc.Status != 200 {
		fix := ""
		if sc.Status == 401 || sc.Status == 403 {
			fix = "bind the agent's service account to ClusterRole system:monitoring (Options.MetricsAccess)"
		} else if comp == agent.CompEtcd && sc.PID != 0 && sc.URL == "" {
			fix = "give etcd --listen-metrics-urls=http://127.0.0.1:2381 (kubeadm's default)"
		}
		return sc, &Unreachable{Reason: NotServed, Detail: fmt.Sprintf("%s on %s: %s", comp, node, sc.Reason), Fix: fix}
	}
	return sc, nil
}

// AuditLog reads at most maxBytes (whole lines) of node's apiserver audit log from cur; maxBytes 0
// returns only the cursor at the log's end (to read later events from). Chunk.Next resumes; Chunk.EOF says
// the active file is read to its end; Chunk.Lost says files were rotated out unread. No log to read (audit
// off, no apiserver there) is an *Unreachable (NotServed).
func (s *Session) AuditLog(ctx context.Context, node string, cur agent.AuditCursor, maxBytes int64) (agentproto.AuditChunk, error) {
	pod, err := s.pod(node)
	if err != nil {
		return agentproto.AuditChunk{}, err
	}
	ch, err := agentproto.Exec(ctx, s.env.Config, s.env.Client, s.env.Namespace, pod, agentproto.CPAudit{Roots: s.roots, Cursor: cur, MaxBytes: maxBytes})
	if err != nil {
		return ch, err
	}
	if len(ch.Files) == 0 && ch.Reason != "" {
		return ch, &Unreachable{Reason: NotServed, Detail: fmt.Sprintf("audit log on %s: %s", node, ch.Reason),
			Fix: "kube-apiserver --audit-policy-file and --audit-log-path (kubeadm: apiServer.extraArgs with a hostPath for both)"}
	}
	return ch, nil
}

// ReadAudit reads node's audit log from cur until the active file's end or maxTotal bytes, in chunks of
// chunk bytes, giving each chunk to fn; it returns the cursor to resume from and whether files were lost.
func (s *Session) ReadAudit(ctx context.Context, node string, cur agent.AuditCursor, chunk, maxTotal int64, fn func([]byte) error) (agent.AuditCursor, bool, error) {
	var total int64
	lost := false
	for total < maxTotal {
		ch, err := s.AuditLog(ctx, node, cur, min(chunk, maxTotal-total))
		if err != nil {
			return cur, lost, err
		}
		lost = lost || ch.Lost
		if len(ch.Data) > 0 {
			if err := fn(ch.Data); err != nil {
				return cur, lost, err
			}
		}
		total += int64(len(ch.Data))
		progressed := ch.Next != cur
		cur = ch.Next
		if ch.EOF || !progressed {
			return cur, lost, nil
		}
	}
	return cur, lost, nil
}

// ControlPlane deploys the agents, reads the control plane on the control-plane nodes, and removes them.
func ControlPlane(ctx context.Context, env *measure.Env, o Options) ([]Component, error) {
	s, err := Start(ctx, env, o)
	if err != nil {
		return nil, err
	}
	defer s.Close(ctx)
	return s.ControlPlane(ctx)
}

// IsUnreachable reports whether err is the node tier's "out of reach", and returns it.
func IsUnreachable(err error) (*Unreachable, bool) {
	var u *Unreachable
	ok := errors.As(err, &u)
	return u, ok
}
