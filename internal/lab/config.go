package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Config is how a lab is started. It is saved in the state directory so that `lab status`, `lab down` and the
// measurements know what is running.
type Config struct {
	// Scenario names the fault scenario the lab was started with ("" for none).
	Scenario string `json:"scenario,omitempty"`
	// Layout is the lab's shape (LayoutManaged or LayoutKubeadm; "" is LayoutManaged): where the control
	// plane runs.
	Layout string `json:"layout,omitempty"`
	// Nodes is the number of kwok (simulated) nodes.
	Nodes int `json:"nodes"`
	// Etcd is where etcd keeps its data.
	Etcd EtcdStorage `json:"etcd"`
	// EtcdQuotaBytes is etcd's --quota-backend-bytes (0: etcd's default, 2 GiB).
	EtcdQuotaBytes int64 `json:"etcdQuotaBytes,omitempty"`
	// EtcdWriteIOPS throttles etcd's writes to its data device (blkio cgroup; 0: no limit). Needs a device
	// (storage "loop" or "device:").
	EtcdWriteIOPS int `json:"etcdWriteIOPS,omitempty"`
	// ControllerManager and Scheduler client settings (0: the component's default).
	ControllerManager ClientSettings `json:"controllerManager"`
	Scheduler         ClientSettings `json:"scheduler"`
	// EndpointSliceBatch is kube-controller-manager's --endpointslice-updates-batch-period (0: its default,
	// none): how long a pod change waits before its EndpointSlice is updated (and its DNS name published).
	EndpointSliceBatch Duration `json:"endpointSliceBatch,omitzero"`
	// NodeMonitorGracePeriod is kube-controller-manager's --node-monitor-grace-period (0: its default, 50 s): how
	// long a node's Lease may go unrenewed before the node lifecycle controller marks it NotReady. At least
	// MinNodeMonitorGracePeriod.
	NodeMonitorGracePeriod Duration `json:"nodeMonitorGracePeriod,omitzero"`
	// Kwok stage delays.
	Kwok KwokSettings `json:"kwok"`
	// APIServerExtraArgs are appended to kube-apiserver's flags (scenarios use this).
	APIServerExtraArgs []string `json:"apiServerExtraArgs,omitempty"`
	// RealNodes is the number of real nodes (containerd, kubelet, kube-proxy), 0..MaxRealNodes.
	RealNodes int `json:"realNodes,omitempty"`
	// AgentBinary is the kubeslow binary packed into the lab's images (default: the running executable).
	AgentBinary string `json:"agentBinary,omitempty"`
	// ImagePulls are the real nodes' kubelet image-pull settings.
	ImagePulls ImagePullSettings `json:"imagePulls"`
	// DNS configures CoreDNS (run when there are real nodes).
	DNS DNSSettings `json:"dns"`
	// Registry shapes the lab registry's serving speed.
	Registry RegistrySettings `json:"registry"`
	// Prometheus runs Debian's Prometheus and node_exporter scraping the lab's components (PrometheusURL).
	Prometheus bool `json:"prometheus,omitempty"`
	// PrometheusRules, with Prometheus, is a rule file's YAML (e.g. `kubeslow rules`) the lab's Prometheus loads
	// and evaluates every scrape interval: its alerts fire in the lab (ALERTS at PrometheusURL).
	PrometheusRules string `json:"prometheusRules,omitempty"`
	// NodeDisk puts real node 1's directory on a loop device (disk scenarios).
	NodeDisk NodeDiskSettings `json:"nodeDisk,omitzero"`
	// CNI is the real nodes' pod network: CNIBridge ("" too) or CNIFlannel (flannel.go).
	CNI string `json:"cni,omitempty"`
	// PodMTU, with flannel, overrides the pods' MTU that flannel's subnet.env gives (0: flannel's; MTU scenarios).
	PodMTU int `json:"podMTU,omitempty"`
	// ProxyMode is kube-proxy's mode on the real nodes: ProxyIPTables ("" too), ProxyNFTables or ProxyIPVS
	// (proxymode.go).
	ProxyMode string `json:"proxyMode,omitempty"`
	// Ingress is the ingress controller run on the real nodes: "" (none) or IngressTraefik (traefik.go).
	Ingress string `json:"ingress,omitempty"`
}

// ImagePullSettings are kubelet's serializeImagePulls and maxParallelImagePulls.
type ImagePullSettings struct {
	Serialize   bool `json:"serialize"`
	MaxParallel int  `json:"maxParallel,omitempty"`
}

// DNSSettings are CoreDNS's cache settings: how long positive and negative (NXDOMAIN) answers are cached; and
// how it runs: one process in the control-plane namespace (Replicas 0), or a Deployment of Replicas pods on
// the real nodes placed by Placement (DNSSpread or DNSPacked), with the upstream for ExternalZone limited to
// UpstreamQPS queries per second per source (0: DefaultUpstreamQPS); CPULimit, when set, is the CoreDNS
// containers' CPU limit (a Kubernetes quantity, e.g. "20m"), under which the kernel's CFS throttles them.
type DNSSettings struct {
	CacheTTL    Duration `json:"cacheTTL,omitempty"`
	DenialTTL   Duration `json:"denialTTL,omitempty"`
	Replicas    int      `json:"replicas,omitempty"`
	Placement   string   `json:"placement,omitempty"`
	UpstreamQPS float64  `json:"upstreamQPS,omitempty"`
	CPULimit    string   `json:"cpuLimit,omitempty"`
}

// MaxDNSReplicas bounds the DNS Deployment.
const MaxDNSReplicas = 10

// RegistrySettings shape the lab registry: bandwidth per response (bytes/s, 0 = unlimited) and added latency
// per request.
type RegistrySettings struct {
	BytesPerSecond int64    `json:"bytesPerSecond,omitempty"`
	Latency        Duration `json:"latency,omitempty"`
}

// ClientSettings are a component's API client limits.
type ClientSettings struct {
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
}

// KwokSettings inject per-phase slowness into simulated nodes through kwok's Stage API.
type KwokSettings struct {
	// PodReadyDelay delays every pod's transition to Running (sandbox, network and start, all at once in kwok);
	// PodReadyJitter adds up to that much more at random.
	PodReadyDelay  Duration `json:"podReadyDelay,omitempty"`
	PodReadyJitter Duration `json:"podReadyJitter,omitempty"`
	// SlowNodes get SlowNodeDelay instead (one slow node among fast ones).
	SlowNodes     []string `json:"slowNodes,omitempty"`
	SlowNodeDelay Duration `json:"slowNodeDelay,omitempty"`
}

// EtcdStorage selects etcd's data directory: a tmpfs (default; immune to a busy shared disk), an existing
// directory, a block device with a filesystem, or a loop device the lab makes (for disk scenarios).
type EtcdStorage struct {
	Kind string `json:"kind"` // "tmpfs", "dir", "device" or "loop"
	Path string `json:"path,omitempty"`
}

// ParseEtcdStorage parses "tmpfs", "loop", "dir:/path" or "device:/dev/xyz".
func ParseEtcdStorage(s string) (EtcdStorage, error) {
	if s == "" || s == "tmpfs" {
		return EtcdStorage{Kind: "tmpfs"}, nil
	}
	if s == "loop" {
		return EtcdStorage{Kind: "loop"}, nil
	}
	kind, path, ok := strings.Cut(s, ":")
	if !ok || path == "" || (kind != "dir" && kind != "device") {
		return EtcdStorage{}, fmt.Errorf("etcd storage %q: want tmpfs, loop, dir:/path or device:/dev/name", s)
	}
	if !strings.HasPrefix(path, "/") {
		return EtcdStorage{}, fmt.Errorf("etcd storage %q: path must be absolute", s)
	}
	return EtcdStorage{Kind: kind, Path: path}, nil
}

func (e EtcdStorage) String() string {
	switch e.Kind {
	case "", "tmpfs":
		return "tmpfs"
	case "loop":
		return "loop"
	}
	return e.Kind + ":" + e.Path
}

// Duration is a time.Duration that reads and writes as "1.5s" in JSON.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "1.5s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	d.Duration = v
	return err
}

// Validate checks the configuration before anything is started.
func (c *Config) Validate() error {
	if l := c.Layout; l != "" && l != LayoutManaged && l != LayoutKubeadm {
		return fmt.Errorf("--layout %q: want %s or %s", l, LayoutManaged, LayoutKubeadm)
	}
	if c.Kubeadm() && c.AgentBinary == "" {
		return errors.New("--layout kubeadm needs the kubeslow binary for the control-plane node's pause image (Config.AgentBinary)")
	}
	if c.Nodes < 0 || c.Nodes > MaxKwokNodes {
		return fmt.Errorf("--nodes %d: want 0..%d", c.Nodes, MaxKwokNodes)
	}
	if c.EtcdQuotaBytes < 0 || c.EtcdWriteIOPS < 0 {
		return errors.New("etcd quota and write IOPS must not be negative")
	}
	if c.EtcdWriteIOPS > 0 && c.Etcd.Kind != "loop" && c.Etcd.Kind != "device" {
		return errors.New("--etcd-write-iops needs etcd on a block device: --etcd-storage loop or device:/dev/x")
	}
	if c.RealNodes < 0 || c.RealNodes > MaxRealNodes {
		return fmt.Errorf("--real-nodes %d: want 0..%d", c.RealNodes, MaxRealNodes)
	}
	if c.PrometheusRules != "" && !c.Prometheus {
		return errors.New("--prometheus-rules needs --prometheus (the lab's Prometheus evaluates them)")
	}
	if err := validateCNI(c); err != nil {
		return err
	}
	if err := validateProxyMode(c); err != nil {
		return err
	}
	if err := validateIngress(c); err != nil {
		return err
	}
	if c.DNS.Replicas < 0 || c.DNS.Replicas > MaxDNSReplicas {
		return fmt.Errorf("--dns-replicas %d: want 0..%d", c.DNS.Replicas, MaxDNSReplicas)
	}
	if c.DNS.Replicas > 0 && c.RealNodes == 0 {
		return errors.New("--dns-replicas needs real nodes (--real-nodes)")
	}
	if p := c.DNS.Placement; p != "" && p != DNSSpread && p != DNSPacked {
		return fmt.Errorf("--dns-placement %q: want %s or %s", p, DNSSpread, DNSPacked)
	}
	if l := c.DNS.CPULimit; l != "" {
		q, err := resource.ParseQuantity(l)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--dns-cpu-limit %q: want a positive CPU quantity (e.g. 20m)", l)
		}
		if c.DNS.Replicas == 0 {
			return errors.New("--dns-cpu-limit needs the DNS Deployment (--dns-replicas)")
		}
	}
	if c.DNS.UpstreamQPS < 0 {
		return errors.New("--dns-upstream-qps must not be negative")
	}
	if c.ImagePulls.MaxParallel < 0 || c.Registry.BytesPerSecond < 0 || c.Registry.Latency.Duration < 0 {
		return errors.New("image-pull and registry settings must not be negative")
	}
	if c.ImagePulls.Serialize && c.ImagePulls.MaxParallel > 1 {
		return errors.New("maxParallelImagePulls needs serializeImagePulls=false (kubelet refuses both)")
	}
	for _, s := range []ClientSettings{c.ControllerManager, c.Scheduler} {
		if s.QPS < 0 || s.Burst < 0 {
			return errors.New("QPS and burst must not be negative")
		}
	}
	if c.EndpointSliceBatch.Duration < 0 {
		return errors.New("the EndpointSlice batch period must not be negative")
	}
	if g := c.NodeMonitorGracePeriod.Duration; g != 0 && g < MinNodeMonitorGracePeriod {
		return fmt.Errorf("the node-monitor grace period %s is under %s: two of the simulated nodes' Lease renewals (every %s) would not fit in it",
			g, MinNodeMonitorGracePeriod, KwokNodeLeaseDuration/4)
	}
	for _, d := range []Duration{c.Kwok.PodReadyDelay, c.Kwok.PodReadyJitter, c.Kwok.SlowNodeDelay} {
		if d.Duration < 0 {
			return errors.New("kwok delays must not be negative")
		}
	}
	return nil
}

// State is what `lab up` records about a running lab.
type State struct {
	Config  Config    `json:"config"`
	Started time.Time `json:"started"`
	// Binaries maps component name to the binary path it runs.
	Binaries map[string]string `json:"binaries"`
	// Versions maps component name to its version.
	Versions map[string]string `json:"versions"`
	// Cgroups are the cgroup directories the lab made (removed by down).
	Cgroups []string `json:"cgroups,omitempty"`
	// Mounts are the mount points the lab made (unmounted by down).
	Mounts []string `json:"mounts,omitempty"`
	// LoopDevice is the loop device the lab attached for etcd (detached by down).
	LoopDevice string `json:"loopDevice,omitempty"`
	// HostPaths are fixed host paths that did not exist before the lab's real nodes made them (removed by down).
	HostPaths []string `json:"hostPaths,omitempty"`
}

func (d Dirs) loadState() (*State, error) {
	b, err := os.ReadFile(d.ConfigFile())
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", d.ConfigFile(), err)
	}
	return &s, nil
}

func (d Dirs) saveState(s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return host.WriteFileAtomic(d.ConfigFile(), b, 0o600)
}
