package measure

import (
	"strings"

	agentimage "github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Signals of the control plane that the API tier cannot give, and how a user of each kind of cluster gets
// them. A measurement that could not read one lists it in its result (result.OutOfReach): missing is never
// healthy. docs/control-plane.md has the table of where each signal comes from on kubeadm, k3s, rke2, EKS,
// GKE and AKS, with its sources.

// Why a control-plane signal is out of reach when kubeslow has only the kubeconfig.
const (
	WhyEtcdNotGiven = "no --etcd-endpoint, and etcd is not served through the API: a managed control plane (EKS, GKE, AKS) hides it, " +
		"and kubeadm, k3s and rke2 bind etcd's metrics to 127.0.0.1:2381 on each control-plane node"
	WhyAuditNotGiven = "no --audit-log: the audit log is a file on the control-plane nodes (kube-apiserver's --audit-log-path, off unless set) " +
		"or, on a managed control plane, in the cloud's logging"
	WhyCoresUnknown = "no node is labelled node-role.kubernetes.io/control-plane: the control plane runs outside every node (a managed control plane), " +
		"so the cores kube-apiserver and etcd may use, and their CPU as the kernel counts it, cannot be read"
)

// Fixes of the control-plane signals out of reach, for a self-managed cluster and for each managed one.
const (
	FixEtcd = "self-managed (kubeadm, k3s, rke2): pass --etcd-endpoint http://127.0.0.1:2381 from a control-plane node or through a port-forward " +
		"to it, or run the node agent on the control-plane nodes; EKS, GKE, AKS: etcd is not exposed to users, so its disk is read only as the " +
		"apiserver sees it (api.responsiveness: etcd_request_p99, etcd_db_size_bytes)"
	FixAudit = "self-managed: pass --audit-log with the file of kube-apiserver's --audit-log-path (kubeadm: set --audit-policy-file and " +
		"--audit-log-path in /etc/kubernetes/manifests/kube-apiserver.yaml; k3s/rke2: kube-apiserver-arg); EKS: enable the \"audit\" control-plane " +
		"log type (aws eks update-cluster-config --logging) and export CloudWatch Logs group /aws/eks/<cluster>/cluster; GKE: Cloud Audit Logs in " +
		"Cloud Logging (Admin Activity is on; enable Data Access logs to see get/list); AKS: a diagnostic setting with category kube-audit " +
		"(kube-audit-admin leaves out get and list, so a LIST storm is not in it); then `kubeslow audit` on the exported events"
	FixComponentCPU = "self-managed: run the node agent on the control-plane nodes (each component's CPU, cgroup and PSI), or --prometheus " +
		"with cAdvisor's series of the control plane (--prometheus-control-plane-cgroup, --prometheus-control-plane-cores); EKS: kube-apiserver's " +
		"CPU is not exposed (scale the control plane through AWS support; the ksh/kcm metrics give the scheduler's and kcm's view); GKE, AKS: " +
		"not exposed (AKS: the Standard/Premium tier scales the control plane); the API tier's saturation signals (APF queueing, the apiserver's " +
		"goroutine scheduling delay, request latency) stand in"
)

// Out-of-reach entries of the control-plane signals.
var (
	OutOfReachEtcd = result.OutOfReach{Signal: "etcd's own metrics: WAL fsync and backend commit latency (its disk), database size against its quota, alarms, its CPU",
		Why: WhyEtcdNotGiven, Fix: FixEtcd, Source: SourceEtcd}
	OutOfReachAudit = result.OutOfReach{Signal: "the apiserver's audit log: which client sends which requests (LIST storms, 409 retries)",
		Why: WhyAuditNotGiven, Fix: FixAudit, Source: SourceAudit}
	OutOfReachComponentCPU = result.OutOfReach{Signal: "the control-plane components' CPU against their cores or cgroup limit (kube-apiserver, etcd, kube-scheduler, kube-controller-manager)",
		Why: WhyCoresUnknown, Fix: FixComponentCPU, Source: SourceComponentCPU}
)

// The sources a run may be unable to read, as the keys of the report's gaps (result.Gap.Source): each is said
// once, with the measurements, signals and rules it held back (result.FoldGaps with GapSource).
const (
	SourceEtcd         = "etcd-metrics"
	SourceAudit        = "audit-log"
	SourceComponentCPU = "control-plane-cpu"
	// SourceNodeTier is the node agent on the control-plane nodes (measure/cpnode), through which etcd's
	// metrics, the audit log and the components' CPU are read without a flag naming them.
	SourceNodeTier   = "node-tier"
	SourceAgentImage = "agent-image"
	SourceRealNodes  = "real-nodes"
	// SourcePermissions starts the key of a permission kubeslow was not granted: "permissions:no permission to create pods".
	SourcePermissions = "permissions"
	SourceBudget      = "budget"
	SourceInterrupted = "interrupted"
)

// sourceTitles name each source in a report's gaps.
var sourceTitles = map[string]string{
	SourceEtcd:         "etcd's own metrics",
	SourceAudit:        "the apiserver's audit log",
	SourceComponentCPU: "the control plane's cores and CPU",
	SourceNodeTier:     "the node agent on the control-plane nodes",
	SourceAgentImage:   "the agent image (kubeslow's binary, run in pods)",
	SourceRealNodes:    "a real node",
	SourceBudget:       "the time budget",
	SourceInterrupted:  "the run was interrupted",
}

// Reasons and fixes of the sources that have one whatever the measurement.
const (
	WhyNoAgentImage = "this build has no default agent image (a development build) and none was given with --agent-image: the node agent " +
		"(nodes.agent), the DNS probes (dns.readiness, dns.lookups) and the node agent on the control-plane nodes (etcd's metrics, the audit " +
		"log and the components' CPU without --etcd-endpoint or --audit-log) run kubeslow in pods from it"
	FixAgentImage  = "push one with `kubeslow image push REF` and pass --agent-image REF (docs/agent-image.md)"
	WhyNoRealNode  = "every node the measurement may use is simulated (kwok): a simulated node has no kubelet, no kernel and runs no pods"
	FixRealNode    = "run on a cluster with a real, Ready, schedulable node (on the lab: one with real nodes)"
	FixPermissions = "`kubeslow rbac` prints the roles kubeslow needs"
)

// NodeTierWhy starts the part of an out-of-reach entry's why that the node tier gave (cpnode.Why): "...; the node
// tier is out of reach: <its reason>" (the tier's fix, when it has one, ends it as " (fix: ...)").
const (
	NodeTierWhy = "the node tier is out of reach: "
	nodeTierFix = " (fix: "
)

// SplitNodeTier splits an out-of-reach entry's why into its own and the node tier's reason and fix ("" when
// the node tier is not named in it).
func SplitNodeTier(why string) (own, tier, fix string) {
	i := strings.Index(why, NodeTierWhy)
	if i < 0 {
		return why, "", ""
	}
	own = strings.TrimSuffix(strings.TrimSpace(why[:i]), ";")
	tier = why[i+len(NodeTierWhy):]
	if j := strings.LastIndex(tier, nodeTierFix); j >= 0 && strings.HasSuffix(tier, ")") {
		tier, fix = tier[:j], tier[j+len(nodeTierFix):len(tier)-1]
	}
	return own, tier, fix
}

// gapKey is source's key with its title.
func gapKey(source, why, fix string) result.GapKey {
	return result.GapKey{Source: source, Title: sourceTitles[source], Reason: why, Fix: fix}
}

// noImage reports whether a reason says the agent image is missing (agentimage.NoImage, or the older wording of
// the DNS probes and the benches).
func noImage(reason string) bool {
	return strings.HasPrefix(reason, "no agent image") || strings.Contains(reason, agentimage.NoImage) ||
		strings.HasPrefix(reason, "needs an image with the kubeslow binary")
}

// nodeTierKey is the source of a node tier's reason: the agent image when that is what it lacks.
func nodeTierKey(tier, fix string) *result.GapKey {
	if noImage(tier) {
		k := gapKey(SourceAgentImage, WhyNoAgentImage, FixAgentImage)
		return &k
	}
	k := gapKey(SourceNodeTier, tier, fix)
	return &k
}

// GapSource is the source of what a run could not measure (result.GapSources): the control-plane signals by
// their Source (the node tier's reason, when they were to be read through it, under the node tier or the agent
// image), and a skip by what its reason says it lacks (the agent image, a real node, a permission, the budget);
// anything else by its normalised reason (result.DefaultGapSource).
func GapSource(e result.GapEntry) result.GapKey {
	if o := e.OutOfReach; o != nil {
		src := o.Source
		for _, known := range []result.OutOfReach{OutOfReachEtcd, OutOfReachAudit, OutOfReachComponentCPU} {
			if src == "" && o.Signal == known.Signal {
				src = known.Source
			}
		}
		if src == "" {
			return result.DefaultGapSource(e)
		}
		own, tier, tierFix := SplitNodeTier(o.Why)
		if own == "" {
			own = map[string]string{SourceEtcd: WhyEtcdNotGiven, SourceAudit: WhyAuditNotGiven,
				SourceComponentCPU: "the components' own CPU, cgroup limits and run-queue wait are read by the node agent on the control-plane nodes"}[src]
		}
		k := gapKey(src, own, o.Fix)
		if k.Title == "" {
			k.Title = o.Signal
		}
		if tier != "" {
			k.Via = nodeTierKey(tier, tierFix)
			k.Reason += "; and the node tier is out of reach (" + k.Via.Title + ", below)"
		}
		return k
	}
	reason := e.Reason
	if a := e.Absence; a != nil {
		reason = a.Reason
		// controlplane.usage without the cores of a control-plane node: its saturation is absent.
		if strings.Contains(reason, "node-role.kubernetes.io/control-plane") && strings.Contains(reason, "cores") {
			return gapKey(SourceComponentCPU, WhyCoresUnknown, FixComponentCPU)
		}
		return result.DefaultGapSource(e)
	}
	switch {
	case noImage(reason):
		return gapKey(SourceAgentImage, WhyNoAgentImage, FixAgentImage)
	case strings.Contains(reason, "simulated nodes"):
		return gapKey(SourceRealNodes, WhyNoRealNode, FixRealNode)
	case strings.HasPrefix(reason, "no permission to"):
		// One gap per permission missing: "no permission to create pods".
		what, _, _ := strings.Cut(reason, " (")
		what, _, _ = strings.Cut(what, ":")
		return result.GapKey{Source: SourcePermissions + ":" + strings.ToLower(what), Title: what, Reason: reason, Fix: FixPermissions}
	case strings.HasPrefix(reason, "time budget of"):
		return gapKey(SourceBudget, reason+": the benchmarks after it did not start", "a longer --budget, or fewer benchmarks (--only, --skip)")
	case strings.HasPrefix(reason, "run interrupted"):
		return gapKey(SourceInterrupted, "the run was interrupted (Ctrl-C, a signal) before these measurements ended", "run again")
	}
	return result.DefaultGapSource(e)
}
