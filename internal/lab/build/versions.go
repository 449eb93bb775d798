package build

// Pinned versions of everything the lab builds from the Go module proxy. Kubernetes stays on 1.36: kubelet
// 1.37+ drops a fallback that Debian's containerd 1.6 needs (see docs/lab.md).
const (
	KubernetesVersion = "1.36.3"
	EtcdVersion       = "3.5.35"
	KwokVersion       = "0.8.0"
	CoreDNSVersion    = "1.15.0"
)

// Component names.
const (
	Etcd              = "etcd"
	KubeAPIServer     = "kube-apiserver"
	KubeControllerMgr = "kube-controller-manager"
	KubeScheduler     = "kube-scheduler"
	Kubelet           = "kubelet"
	KubeProxy         = "kube-proxy"
	Kwok              = "kwok"
	CoreDNS           = "coredns"
)

// kubernetesCommands are built from k8s.io/kubernetes in one go build.
var kubernetesCommands = []string{KubeAPIServer, KubeControllerMgr, KubeScheduler, Kubelet, KubeProxy}
