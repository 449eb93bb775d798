package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// MaxRealNodes is how many real nodes (containerd + kubelet + kube-proxy, each in its own network
// namespace) the lab runs next to the kwok nodes.
const MaxRealNodes = 2

// RealNodeLabel marks nodes backed by a real kubelet.
const RealNodeLabel = "kubeslow.dev/lab-node"

// realNode is the i-th real node (1-based); index 0 is the control-plane node of the kubeadm layout, which
// lives in the lab's own namespace (NetNS) at ControlPlaneIP, so that every address is the same in both
// layouts.
type realNode struct{ index int }

// controlPlaneNode is the kubeadm layout's control-plane node.
var controlPlaneNode = realNode{0}

func (n realNode) name() string {
	if n.index == 0 {
		return ControlPlaneNodeName
	}
	return fmt.Sprintf("lab-node-%d", n.index)
}
func (n realNode) netns() string {
	if n.index == 0 {
		return NetNS
	}
	return fmt.Sprintf("kubeslow-node-%d", n.index)
}
func (n realNode) ip() string {
	if n.index == 0 {
		return ControlPlaneIP
	}
	return fmt.Sprintf("198.19.255.%d", 10+n.index)
}
func (n realNode) bridgePort() string { return fmt.Sprintf("ksl-n%d", n.index) }
func (n realNode) dir(d Dirs) string  { return filepath.Join(d.State, "nodes", n.name()) }
func (n realNode) proc(c string) string {
	return n.name() + "." + c
}
func (n realNode) sock(d Dirs) string {
	return filepath.Join(n.dir(d), "containerd", "containerd.sock")
}

// cgroupRoot is the kubelet's --cgroup-root: under the lab's own cgroup, so teardown finds every container.
func (n realNode) cgroupRoot() string { return "/" + host.CgroupParent + "/pods-" + n.name() }

// RealNodeName is the name of the i-th real node.
func RealNodeName(i int) string { return realNode{i}.name() }

// RealNodeIP is the address of the i-th real node on the lab's node network.
func RealNodeIP(i int) string { return realNode{i}.ip() }

// RealNodeNetNS is the network namespace of the i-th real node.
func RealNodeNetNS(i int) string { return realNode{i}.netns() }

// setupNodeNetwork gives the node its namespace, with eth0 on the lab bridge and a default route through
// the control-plane namespace.
func setupNodeNetwork(ctx context.Context, n realNode) error {
	if host.NetnsExists(n.netns()) {
		return nil
	}
	if err := host.AddNetns(ctx, n.netns()); err != nil {
		return err
	}
	if err := host.IPIn(ctx, NetNS, "link", "add", n.bridgePort(), "type", "veth", "peer", "name", "eth0", "netns", n.netns()); err != nil {
		return err
	}
	for _, s := range [][]string{{"link", "set", n.bridgePort(), "master", Bridge}, {"link", "set", n.bridgePort(), "up"}} {
		if err := host.IPIn(ctx, NetNS, s...); err != nil {
			return err
		}
	}
	for _, s := range [][]string{
		{"addr", "add", fmt.Sprintf("%s/%d", n.ip(), NodeNetPrefix), "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", "default", "via", ControlPlaneIP},
	} {
		if err := host.IPIn(ctx, n.netns(), s...); err != nil {
			return err
		}
	}
	return host.EnableForwarding(ctx, n.netns())
}

// addPodRoutes routes every real node's pod CIDR to that node, in the control-plane namespace and in the
// other nodes' namespaces (a routed pod network, like flannel's host-gw or Calico without encapsulation).
// With flannel (betweenNodes false) only the control plane's routes are added: the nodes reach each other's
// pods through flannel.1, and the control-plane namespace (outside the overlay, like a router in front of the
// nodes) still reaches the pods (the registry, kubectl port-forward, the host's routes).
func addPodRoutes(ctx context.Context, podCIDRs map[int]string, nodes []realNode, betweenNodes bool) error {
	for _, owner := range nodes {
		cidr := podCIDRs[owner.index]
		if cidr == "" {
			return fmt.Errorf("node %s has no pod CIDR", owner.name())
		}
		if err := host.IPIn(ctx, NetNS, "route", "replace", cidr, "via", owner.ip()); err != nil {
			return err
		}
		for _, other := range nodes {
			if other.index == owner.index || !betweenNodes {
				continue
			}
			if err := host.IPIn(ctx, other.netns(), "route", "replace", cidr, "via", owner.ip()); err != nil {
				return err
			}
		}
	}
	return nil
}

// containerdConfig is containerd 1.6's CRI configuration for a lab node. The sandbox image is the lab's own
// pause image (nothing is ever pulled from outside); the lab registry is reachable over plain HTTP.
func containerdConfig(d Dirs, c *Config, n realNode) string {
	dir := filepath.Join(n.dir(d), "containerd")
	conf := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  stream_server_address = "127.0.0.1"
  netns_mounts_under_state_dir = true
  # runc cannot set a negative oom_score_adj here (the VM's bounding set lacks CAP_SYS_RESOURCE).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
    conf_template = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%[9]q]
    endpoint = ["http://%[9]s"]
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), n.sock(d), filepath.Join(dir, "opt"), PauseImage,
		filepath.Join(dir, "runc"), filepath.Join(n.dir(d), "cni", "net.d"), filepath.Join(n.dir(d), "cni", "template.conflist"), RegistryHost())
	if cniOf(c) == CNIFlannel {
		// The CNI configuration is written from flannel's subnet.env (flannelSteps), not rendered by containerd.
		conf = strings.Replace(conf, fmt.Sprintf("    conf_template = %q\n", filepath.Join(n.dir(d), "cni", "template.conflist")), "", 1)
	}
	return conf
}

// cniTemplate is rendered by containerd once the kubelet reports the node's pod CIDR.
func cniTemplate(d Dirs, n realNode) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kubeslow-lab",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q,
              "ranges": [[{"subnet": "{{.PodCIDR}}"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, filepath.Join(n.dir(d), "cni", "ipam"))
}

// labEviction is the real nodes' kubelet evictionHard: kubelet's own defaults (memory.available 100Mi, nodefs
// 10%, imagefs 15%, inodes 5%) but for disk space, 5% of the filesystem. The lab's nodes keep their containerd and
// kubelet directories on the host's filesystem, shared with every other tenant of the machine, so its free share
// is mostly the others' build caches: at 34 GB free of 252 GB (13.5%, under imagefs's 15%) every real node of
// every lab had DiskPressure and rejected its pods (2026-11-26). 5% is below both defaults, so a node on its own
// loop disk (the disk scenarios) reaches pressure no earlier than before. Setting evictionHard replaces all of
// kubelet's defaults, hence every signal listed.
//
// Image garbage collection is off (imageGCHighThresholdPercent 100, kubelet's documented way): the lab's images
// (kubeslow.local/kubeslow:lab, the pause image) are imported into each node's containerd, not pullable from any
// registry, so an image the kubelet collected could never come back. Kubelet collects unused images when its
// image filesystem, here the host's, is past 85% used (capacity minus available: 78% on this machine with 56 GB
// available of 252 GB, and its available space moves with the other tenants': 34 GB on 2026-11-26). The likely
// cause of CI's run of 2026-11-28, where a lab shared by five tests could no longer start the agent image's pods
// on its real nodes in the fifth (the kubelets' logs were gone with the lab, so it is not proven).
//
// Pull credentials are never verified (imagePullCredentialsVerificationPolicy NeverVerify; KEP-2535's
// default, NeverVerifyPreloadedImages, since 1.35): once a node's kubelet has pulled the agent image under a
// registry's name (`kubeslow image push`, TestIntegrationImagePushKubeconfigOnly), it verifies that image's
// credentials for its other names too, and a pod of the imported, never pulled kubeslow.local/kubeslow:lab then
// makes it pull kubeslow.local, which resolves nowhere: ImagePullBackOff with the image on the node
// (TestIntegrationNodeDNS after that test, 2026-11-28). The lab's images are its own, imported by the lab.
const labEviction = `evictionHard: {memory.available: "100Mi", nodefs.available: "5%", nodefs.inodesFree: "5%", imagefs.available: "5%", imagefs.inodesFree: "5%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
imagePullCredentialsVerificationPolicy: NeverVerify
`

// diskWarnShare is the host filesystem's free share under which `lab up` warns that its real nodes are near
// labEviction's 5%: what a lab writes there (images imported into each node's containerd, logs, etcd) is a
// few GB, ~2-3% of this project's 252 GB disk. On 2026-11-30 a machine at 5.2% free (13 GB, three Go and lab
// caches of its own runs beside) had DiskPressure on both real nodes mid-run and every agent pod evicted.
const diskWarnShare = 0.08

// warnDiskHeadroom says, on lab up's progress, when the filesystem of the lab's nodes has less than
// diskWarnShare free: their kubelets would soon report DiskPressure and evict pods, which looks like a fault
// of whatever runs on the lab.
func warnDiskHeadroom(d Dirs, step func(string, ...any)) {
	free, size, err := host.FreeSpace(d.State)
	if err != nil || size == 0 || float64(free)/float64(size) >= diskWarnShare {
		return
	}
	step("warning: the filesystem of %s has %.1f%% free (%.1f of %.0f GB): the real nodes' kubelets report DiskPressure and evict pods below 5%% (their evictionHard)",
		d.State, 100*float64(free)/float64(size), float64(free)/1e9, float64(size)/1e9)
}

func kubeletConfig(d Dirs, c *Config, n realNode) string {
	p := func(f string) string { return filepath.Join(d.PKIDir(), f) }
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
tlsCertFile: %q
tlsPrivateKeyFile: %q
cgroupDriver: cgroupfs
cgroupRoot: %q
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
clusterDNS: [%s]
clusterDomain: cluster.local
resolvConf: %q
podLogsDir: %q
maxPods: 110
serializeImagePulls: %v
%s`, n.ip(), p("ca.crt"), p(n.name()+"-serving.crt"), p(n.name()+"-serving.key"), n.cgroupRoot(), n.sock(d), ClusterDNSIP,
		filepath.Join(n.dir(d), "resolv.conf"), filepath.Join(n.dir(d), "pod-logs"), c.ImagePulls.Serialize, labEviction)
	if !c.ImagePulls.Serialize && c.ImagePulls.MaxParallel > 0 {
		fmt.Fprintf(&b, "maxParallelImagePulls: %d\n", c.ImagePulls.MaxParallel)
	}
	if n == controlPlaneNode {
		// kubeadm's kubelet on a control-plane node: the static pods' manifests directory. syncFrequency (1 min
		// by default) is how long a static pod that started before its Node was registered waits for its
		// mirror pod: measured 69 s from the control plane up to the four mirror pods Running; 10 s bounds it.
		fmt.Fprintf(&b, "staticPodPath: %q\nsyncFrequency: 10s\n", ManifestsDir(d))
	}
	return b.String()
}

func kubeProxyConfig(d Dirs, c *Config, n realNode) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: %s
clientConnection: {kubeconfig: %q}
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
`, proxyModeOf(c), d.componentKubeconfig("kube-proxy"), PodCIDR, n.name(), n.ip())
}

// nodeFiles makes a node's directories, certificates and kubeconfigs (its configuration files belong to its
// components: see realNodeSteps).
func nodeFiles(d Dirs, n realNode) error {
	for _, sub := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(n.dir(d), sub), 0o755); err != nil {
			return err
		}
	}
	for _, spec := range []certSpec{
		{Name: n.name(), CN: "system:node:" + n.name(), Org: "system:nodes"},
		{Name: n.name() + "-serving", CN: n.name(), Server: true, DNS: []string{n.name(), "localhost"}, IPs: []string{"127.0.0.1", n.ip()}},
		{Name: "kube-proxy", CN: "system:kube-proxy"},
	} {
		if err := ensureCert(d, spec); err != nil {
			return err
		}
	}
	if err := writeKubeconfig(d, d.componentKubeconfig(n.name()), n.name()); err != nil {
		return err
	}
	return writeKubeconfig(d, d.componentKubeconfig("kube-proxy"), "kube-proxy")
}

// RealNodeDir is the i-th real node's directory on this machine: its containerd root and state, kubelet root,
// CNI files and pod logs (the runtime's disk as the node sees it).
func RealNodeDir(d Dirs, i int) string { return realNode{i}.dir(d) }
