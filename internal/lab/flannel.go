package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/lab/build"
	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// The real nodes' pod network (Config.CNI).
const (
	// CNIBridge: Debian's bridge plugin on each node and static routes between the nodes' pod CIDRs (routed,
	// like flannel's host-gw). The default.
	CNIBridge = "bridge"
	// CNIFlannel: flanneld (VXLAN backend, kube subnet manager) on each node; Debian's bridge plugin configured
	// from flannel's subnet.env; no routes between the nodes but flannel's over flannel.1.
	CNIFlannel = "flannel"
)

// Flannel is flanneld's component name; FlannelVersion its pinned version.
const (
	Flannel        = build.Flannel
	FlannelVersion = build.FlannelVersion
)

// VXLANOverhead is what VXLAN adds to each packet over IPv4: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14
// (RFC 7348 section 5); flannel sets flannel.1 to the uplink's MTU minus this.
const VXLANOverhead = 50

// flannelHealthPort is flanneld's --healthz-port (on 127.0.0.1 in the node's namespace).
const flannelHealthPort = 10267

// flannelUser is flanneld's client identity (its certificate's CN), bound to flannelRole.
const flannelUser = "system:kubeslow-flannel"

// CNIs lists the values of --cni.
var CNIs = []string{CNIBridge, CNIFlannel}

// cniOf is c's CNI, the default filled in.
func cniOf(c *Config) string {
	if c.CNI == "" {
		return CNIBridge
	}
	return c.CNI
}

// validateCNI checks the pod-network settings.
func validateCNI(c *Config) error {
	switch cniOf(c) {
	case CNIBridge:
		if c.PodMTU != 0 {
			return errors.New("--pod-mtu is a flannel setting: it needs --cni flannel")
		}
	case CNIFlannel:
		if c.RealNodes == 0 {
			return errors.New("--cni flannel needs real nodes (--real-nodes)")
		}
		if c.PodMTU != 0 && (c.PodMTU < 576 || c.PodMTU > 9000) {
			return fmt.Errorf("--pod-mtu %d: want 576..9000 (0: flannel's, from subnet.env)", c.PodMTU)
		}
	default:
		return fmt.Errorf("--cni %q: want %s", c.CNI, strings.Join(CNIs, " or "))
	}
	return nil
}

func (n realNode) flannelDir(d Dirs) string { return filepath.Join(n.dir(d), "flannel") }
func (n realNode) subnetEnv(d Dirs) string  { return filepath.Join(n.flannelDir(d), "subnet.env") }
func (n realNode) flannelNetConf(d Dirs) string {
	return filepath.Join(n.flannelDir(d), "net-conf.json")
}
func (n realNode) cniConflist(d Dirs) string {
	return filepath.Join(n.dir(d), "cni", "net.d", "10-flannel.conflist")
}

// flannelNetConf is flannel's net-conf.json: the cluster's pod CIDR, the VXLAN backend (VNI 1, UDP 8472: flannel's
// defaults).
func flannelNetConf() string {
	b, _ := json.MarshalIndent(map[string]any{"Network": PodCIDR, "EnableIPv4": true, "Backend": map[string]any{"Type": "vxlan"}}, "", "  ")
	return string(b) + "\n"
}

// flannelSteps run flanneld on node n once the controller-manager has given the node its pod CIDR, and write the
// node's CNI configuration from the subnet.env flanneld writes.
func flannelSteps(d Dirs, c *Config, n realNode, bin func(string) string) []Step {
	kubeconfig := d.componentKubeconfig("flannel")
	mtu := "the MTU flannel writes there (FLANNEL_MTU)"
	if c.PodMTU > 0 {
		mtu = fmt.Sprintf("MTU %d (--pod-mtu, overriding flannel's FLANNEL_MTU)", c.PodMTU)
	}
	return []Step{
		{Name: n.proc("pod-cidr"), What: fmt.Sprintf("%s registered with a pod CIDR (kube-controller-manager --allocate-node-cidrs); flanneld's RBAC, certificate and kubeconfig", n.name()),
			Do: func(ctx context.Context, u *upRun) error {
				if err := ensureFlannelRBAC(ctx, u.client); err != nil {
					return fmt.Errorf("flannel RBAC: %w", err)
				}
				if err := ensureCert(u.d, certSpec{Name: "flannel", CN: flannelUser}); err != nil {
					return err
				}
				if err := writeKubeconfig(u.d, kubeconfig, "flannel"); err != nil {
					return err
				}
				cidr, err := waitPodCIDR(ctx, u.client, n.name())
				if err != nil {
					return err
				}
				u.step("%s has pod CIDR %s", n.name(), cidr)
				return nil
			}},
		{Name: n.proc(Flannel), Component: &Component{Name: n.proc(Flannel), Namespace: n.netns(),
			Argv: []string{bin(Flannel), "--kube-subnet-mgr", "--kubeconfig-file=" + kubeconfig, "--iface=eth0",
				"--net-config-path=" + n.flannelNetConf(d), "--subnet-file=" + n.subnetEnv(d),
				"--healthz-ip=127.0.0.1", "--healthz-port=" + strconv.Itoa(flannelHealthPort)},
			Env:    []string{sbinPath, "NODE_NAME=" + n.name()},
			Files:  []File{{Path: n.flannelNetConf(d), Data: flannelNetConf(), Mode: 0o644}},
			Health: nsGetOK(n.netns(), fmt.Sprintf("http://127.0.0.1:%d/healthz", flannelHealthPort))},
			What: fmt.Sprintf("flanneld wrote %s; %s written from it: Debian's bridge plugin (cni0) on FLANNEL_SUBNET with %s", n.subnetEnv(d), n.cniConflist(d), mtu),
			Do: func(ctx context.Context, u *upRun) error {
				env, err := waitSubnetEnv(ctx, n.subnetEnv(u.d))
				if err != nil {
					return err
				}
				conf, err := flannelConflist(u.d, n, env, u.c.PodMTU)
				if err != nil {
					return err
				}
				if err := host.WriteFileAtomic(n.cniConflist(u.d), []byte(conf), 0o644); err != nil {
					return err
				}
				u.step("%s: flannel subnet %s, MTU %d; CNI configuration written", n.name(), env.Subnet, env.MTU)
				return nil
			}},
	}
}

// ensureFlannelRBAC binds flanneld's user to what flannel's own manifest (kube-flannel.yml) grants it.
func ensureFlannelRBAC(ctx context.Context, c kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-lab:flannel"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
	}}
	if err := created(c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-lab:flannel"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: flannelUser}}}
	return created(c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}))
}

// waitPodCIDR waits until the node is registered and has its pod CIDR (a watch would need the node to exist;
// the node appears within a second of its kubelet's start, and this polls the one object every 200 ms).
func waitPodCIDR(ctx context.Context, c kubernetes.Interface, node string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil && n.Spec.PodCIDR != "" {
			return n.Spec.PodCIDR, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("node %s has no pod CIDR after 2 minutes (last error: %v)", node, err)
		case <-t.C:
		}
	}
}

// SubnetEnv is what flanneld writes to its subnet file.
type SubnetEnv struct {
	Network string // FLANNEL_NETWORK: the cluster's pod network
	Subnet  string // FLANNEL_SUBNET: this node's gateway address and prefix (198.18.1.1/24)
	MTU     int    // FLANNEL_MTU: the overlay's MTU (flannel.1's)
	IPMasq  bool   // FLANNEL_IPMASQ
}

// ParseSubnetEnv reads flannel's subnet.env (KEY=VALUE lines); FLANNEL_SUBNET and FLANNEL_MTU are required.
func ParseSubnetEnv(b []byte) (SubnetEnv, error) {
	var e SubnetEnv
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return e, fmt.Errorf("subnet.env: line %q is not KEY=VALUE", line)
		}
		switch k {
		case "FLANNEL_NETWORK":
			e.Network = v
		case "FLANNEL_SUBNET":
			if _, _, err := net.ParseCIDR(v); err != nil {
				return e, fmt.Errorf("subnet.env: FLANNEL_SUBNET %q: %w", v, err)
			}
			e.Subnet = v
		case "FLANNEL_MTU":
			m, err := strconv.Atoi(v)
			if err != nil || m < 68 || m > 65535 {
				return e, fmt.Errorf("subnet.env: FLANNEL_MTU %q: want 68..65535", v)
			}
			e.MTU = m
		case "FLANNEL_IPMASQ":
			e.IPMasq = v == "true"
		}
	}
	if e.Subnet == "" || e.MTU == 0 {
		return e, errors.New("subnet.env: FLANNEL_SUBNET and FLANNEL_MTU are required")
	}
	return e, nil
}

// waitSubnetEnv waits for flanneld's subnet file (written once its lease and flannel.1 are set up).
func waitSubnetEnv(ctx context.Context, path string) (SubnetEnv, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if e, perr := ParseSubnetEnv(b); perr == nil {
				return e, nil
			}
		}
		select {
		case <-ctx.Done():
			return SubnetEnv{}, fmt.Errorf("flanneld wrote no valid %s within a minute (last: %v)", path, err)
		case <-t.C:
		}
	}
}

// flannelConflist is the node's CNI configuration in flannel mode: Debian's bridge plugin on cni0 with
// host-local addresses from FLANNEL_SUBNET and flannel's MTU (or podMTU when set), as flannel's own CNI plugin
// would delegate to it.
func flannelConflist(d Dirs, n realNode, e SubnetEnv, podMTU int) (string, error) {
	_, subnet, err := net.ParseCIDR(e.Subnet)
	if err != nil {
		return "", err
	}
	mtu := e.MTU
	if podMTU > 0 {
		mtu = podMTU
	}
	conf := map[string]any{
		"cniVersion": "1.0.0", "name": "kubeslow-lab-flannel",
		"plugins": []any{
			map[string]any{"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true, "mtu": mtu,
				"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(n.dir(d), "cni", "ipam"),
					"ranges": [][]map[string]string{{{"subnet": subnet.String()}}}, "routes": []map[string]string{{"dst": "0.0.0.0/0"}}}},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b) + "\n", err
}

// SetTransitMTU sets the MTU of real node i's port on the lab bridge (the control-plane namespace's end of the
// node's link): the transit link between the nodes, which the nodes' own MTUs do not show (mtu-transit).
func SetTransitMTU(ctx context.Context, i, mtu int) error {
	if i < 1 || i > MaxRealNodes || mtu < 576 || mtu > 9000 {
		return fmt.Errorf("transit MTU: node 1..%d, MTU 576..9000", MaxRealNodes)
	}
	return host.IPIn(ctx, NetNS, "link", "set", realNode{i}.bridgePort(), "mtu", strconv.Itoa(mtu))
}

// SetPodMTU rewrites the CNI configuration of every real node of a running flannel lab with the pods' MTU set to
// mtu instead of flannel's (0: back to flannel's): pods created afterwards get it (mtu-pod).
func SetPodMTU(d Dirs, c *Config, mtu int) error {
	if cniOf(c) != CNIFlannel {
		return errors.New("the pods' MTU override needs a flannel lab (--cni flannel)")
	}
	for i := 1; i <= c.RealNodes; i++ {
		n := realNode{i}
		b, err := os.ReadFile(n.subnetEnv(d))
		if err != nil {
			return err
		}
		env, err := ParseSubnetEnv(b)
		if err != nil {
			return err
		}
		conf, err := flannelConflist(d, n, env, mtu)
		if err != nil {
			return err
		}
		if err := host.WriteFileAtomic(n.cniConflist(d), []byte(conf), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// SetOverlayRate caps the egress of flannel.1 on every real node of a running flannel lab at mbit Mbit/s (a
// token bucket, tc's tbf) or, with 0, takes the cap off: the overlay that tops out (case B's flannel carried
// ~2 of the nodes' 10–15 Gbit/s), while the nodes' own link stays as it was.
func SetOverlayRate(ctx context.Context, c *Config, mbit int) error {
	if cniOf(c) != CNIFlannel {
		return errors.New("the overlay's rate needs a flannel lab (--cni flannel)")
	}
	if mbit < 0 || mbit > 100000 {
		return fmt.Errorf("overlay rate %d Mbit/s: want 0 (no cap) to 100000", mbit)
	}
	for i := 1; i <= c.RealNodes; i++ {
		ns := realNode{i}.netns()
		if mbit == 0 {
			if _, err := host.RunIn(ctx, host.Short, nil, ns, "tc", "qdisc", "del", "dev", "flannel.1", "root"); err != nil &&
				!strings.Contains(err.Error(), "No such file") && !strings.Contains(err.Error(), "handle of zero") {
				return fmt.Errorf("%s: %w", ns, err)
			}
			continue
		}
		// A burst of 64 KiB (a TSO segment's worth) and at most 50 ms of queue: the rate holds for bulk
		// transfers, and small requests pass at the link's speed.
		if _, err := host.RunIn(ctx, host.Short, nil, ns, "tc", "qdisc", "replace", "dev", "flannel.1", "root",
			"tbf", "rate", fmt.Sprintf("%dmbit", mbit), "burst", "64kb", "latency", "50ms"); err != nil {
			return fmt.Errorf("%s: %w", ns, err)
		}
	}
	return nil
}
