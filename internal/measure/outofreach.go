package measure

import "github.com/kubeslow/kubeslow/pkg/result"

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
		Why: WhyEtcdNotGiven, Fix: FixEtcd}
	OutOfReachAudit = result.OutOfReach{Signal: "the apiserver's audit log: which client sends which requests (LIST storms, 409 retries)",
		Why: WhyAuditNotGiven, Fix: FixAudit}
	OutOfReachComponentCPU = result.OutOfReach{Signal: "the control-plane components' CPU against their cores or cgroup limit (kube-apiserver, etcd, kube-scheduler, kube-controller-manager)",
		Why: WhyCoresUnknown, Fix: FixComponentCPU}
)
