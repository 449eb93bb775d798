package kube

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"
)

// NodeProxyTimeout bounds one read of a kubelet through the apiserver's node proxy.
const NodeProxyTimeout = 20 * time.Second

// NodeProxyGet reads path (e.g. "configz", or "metrics", "cadvisor") from node's kubelet through the
// apiserver's node proxy (RBAC: get nodes/proxy), within NodeProxyTimeout.
func NodeProxyGet(ctx context.Context, c kubernetes.Interface, node string, path ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, NodeProxyTimeout)
	defer cancel()
	return c.CoreV1().RESTClient().Get().AbsPath(append([]string{"/api/v1/nodes", node, "proxy"}, path...)...).DoRaw(ctx)
}
