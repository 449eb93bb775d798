package lab

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
# Metadata for every request: who (user, user agent), what (verb, resource, object), outcome (code), when.
# RequestReceived is omitted: each request is logged once, at ResponseComplete (or Panic).
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

func etcdArgs(d Dirs, c *Config, bin string) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d,http://%s:%d", EtcdPort, ControlPlaneIP, EtcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", EtcdPeerPort)
	args := []string{bin,
		"--name=kubeslow-lab", "--data-dir=" + etcdDataDir(d, c),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + fmt.Sprintf("http://%s:%d", ControlPlaneIP, EtcdPort),
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=kubeslow-lab=" + peer, "--log-level=warn",
	}
	if c.EtcdQuotaBytes > 0 {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(c.EtcdQuotaBytes, 10))
	}
	return args
}

// etcdDataDir is inside the etcd mount (tmpfs or device) or the user's directory.
func etcdDataDir(d Dirs, c *Config) string {
	if c.Etcd.Kind == "dir" {
		return filepath.Join(c.Etcd.Path, "kubeslow-etcd")
	}
	return filepath.Join(d.EtcdDir(), "data")
}

// EtcdEndpoint is etcd's client URL as seen from the host.
func EtcdEndpoint() string { return fmt.Sprintf("http://%s:%d", ControlPlaneIP, EtcdPort) }

// auditPolicyPath is the apiserver's --audit-policy-file (auditPolicy).
func auditPolicyPath(d Dirs) string { return filepath.Join(d.ConfDir(), "audit-policy.yaml") }

func apiserverArgs(d Dirs, c *Config, bin string) []string {
	policy := auditPolicyPath(d)
	p := func(n string) string { return filepath.Join(d.PKIDir(), n) }
	args := []string{bin,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", EtcdPort),
		"--bind-address=0.0.0.0", fmt.Sprintf("--secure-port=%d", APIServerPort), "--advertise-address=" + ControlPlaneIP,
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + p("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + p("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + p("ca.crt"), "--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true", "--profiling=false",
		"--audit-policy-file=" + policy, "--audit-log-path=" + d.AuditLog(), "--audit-log-format=json",
		"--audit-log-maxsize=200", "--audit-log-maxbackup=5", "--audit-log-compress=false",
	}
	return append(args, c.APIServerExtraArgs...)
}

func controllerManagerArgs(d Dirs, c *Config, bin string) []string {
	kc := d.componentKubeconfig("controller-manager")
	p := func(n string) string { return filepath.Join(d.PKIDir(), n) }
	args := []string{bin,
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=" + ControlPlaneIP, "--leader-elect=false", "--use-service-account-credentials=true",
		"--allocate-node-cidrs=true", "--cluster-cidr=" + PodCIDR, "--node-cidr-mask-size=" + strconv.Itoa(NodeCIDRMask),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--root-ca-file=" + p("ca.crt"), "--service-account-private-key-file=" + p("sa.key"),
		"--cluster-signing-cert-file=" + p("ca.crt"), "--cluster-signing-key-file=" + p("ca.key"),
	}
	if c.ControllerManager.QPS > 0 {
		args = append(args, "--kube-api-qps="+strconv.FormatFloat(float64(c.ControllerManager.QPS), 'f', -1, 32))
	}
	if c.ControllerManager.Burst > 0 {
		args = append(args, "--kube-api-burst="+strconv.Itoa(c.ControllerManager.Burst))
	}
	if b := c.EndpointSliceBatch.Duration; b > 0 {
		args = append(args, "--endpointslice-updates-batch-period="+b.String())
	}
	if g := c.NodeMonitorGracePeriod.Duration; g > 0 {
		args = append(args, "--node-monitor-grace-period="+g.String())
	}
	if c.Kubeadm() {
		return kubeadmArgs(args)
	}
	return args
}

// schedulerConfig is kube-scheduler's KubeSchedulerConfiguration and where it goes.
func schedulerConfig(d Dirs, c *Config) File {
	kc := d.componentKubeconfig("scheduler")
	var cc strings.Builder
	// kubeadm's scheduler elects a leader (one replica still holds the kube-scheduler Lease); the managed
	// layout's does not.
	fmt.Fprintf(&cc, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: %v\nclientConnection:\n  kubeconfig: %q\n", c.Kubeadm(), kc)
	if c.Scheduler.QPS > 0 {
		fmt.Fprintf(&cc, "  qps: %g\n", c.Scheduler.QPS)
	}
	if c.Scheduler.Burst > 0 {
		fmt.Fprintf(&cc, "  burst: %d\n", c.Scheduler.Burst)
	}
	return File{Path: filepath.Join(d.ConfDir(), "scheduler.yaml"), Data: cc.String(), Mode: 0o644}
}

func schedulerArgs(d Dirs, c *Config, bin string) []string {
	kc := d.componentKubeconfig("scheduler")
	args := []string{bin, "--config=" + schedulerConfig(d, c).Path,
		"--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc, "--bind-address=" + ControlPlaneIP}
	if c.Kubeadm() {
		return kubeadmArgs(args)
	}
	return args
}

// kwokStagesPath is kwok's --config (its stages, kwokStages).
func kwokStagesPath(d Dirs) string { return filepath.Join(d.ConfDir(), "kwok-stages.yaml") }

func kwokArgs(d Dirs, bin string) []string {
	return []string{bin, "--config=" + kwokStagesPath(d), "--kubeconfig=" + d.componentKubeconfig("kwok"),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + kube.SimulatedNodeValue,
		"--cidr=" + KwokPodCIDR, "--node-ip=" + ControlPlaneIP,
		fmt.Sprintf("--node-lease-duration-seconds=%d", int(KwokNodeLeaseDuration.Seconds())),
		fmt.Sprintf("--server-address=%s:%d", ControlPlaneIP, KwokPort)}
}
