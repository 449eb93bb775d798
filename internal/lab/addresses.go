package lab

// Every address the lab uses comes from 198.18.0.0/15, the range RFC 2544 reserves for benchmarking, so the
// lab can never collide with, or send traffic to, a real network.
const (
	// NetNS is the network namespace that holds the control plane (and, later, the node bridge).
	NetNS = "kubeslow-lab"
	// HostVeth / UplinkVeth are the two ends of the link between the host and the lab namespace.
	HostVeth   = "ksl-host"
	UplinkVeth = "ksl-uplink"
	// HostLinkIP is the host's end of the uplink, UplinkIP the lab's end (a /30).
	HostLinkIP = "198.19.254.1"
	UplinkIP   = "198.19.254.2"
	LinkPrefix = 30
	// Bridge is the lab's "node network"; ControlPlaneIP is the control-plane node's address on it.
	Bridge          = "ksl-br0"
	ControlPlaneIP  = "198.19.255.1"
	NodeNetCIDR     = "198.19.255.0/24"
	NodeNetPrefix   = 24
	PodCIDR         = "198.18.0.0/16"
	NodeCIDRMask    = 24
	ServiceCIDR     = "198.19.0.0/20"
	KubernetesSvcIP = "198.19.0.1"
	ClusterDNSIP    = "198.19.0.10"
	// KwokPodCIDR is where kwok draws fake pods' IPs when a node has no podCIDR.
	KwokPodCIDR = "198.18.128.0/17"

	APIServerPort = 6443
	EtcdPort      = 2379
	EtcdPeerPort  = 2380
	KwokPort      = 10247
)

// hostRoutes are the prefixes the host reaches through the lab namespace.
var hostRoutes = []string{PodCIDR, ServiceCIDR, NodeNetCIDR}

// MaxKwokNodes is bounded by the node CIDR allocation: /16 split into /24 per node.
const MaxKwokNodes = 250
