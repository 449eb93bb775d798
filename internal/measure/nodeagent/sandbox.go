package nodeagent

import (
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/source/agent"
)

// DefaultNodeStatusMaxImages is the kubelet's nodeStatusMaxImages: a node's status lists at most that many
// images, the largest first, so a small image missing from a full list may still be on the node.
const DefaultNodeStatusMaxImages = 50

// normalRef is an image reference in its full form (docker.io/library/x:latest), or ref itself when it does
// not parse.
func normalRef(ref string) string {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return ref
	}
	return r.Name()
}

// MarkSandboxPresence sets each host's Sandbox.Present from its node's status: true when the status lists
// the image, false when it does not and the list is complete, unknown when the list is full (the kubelet
// cuts it at nodeStatusMaxImages) or the node is not among nodes.
func MarkSandboxPresence(hosts []agent.NodeHost, nodes []corev1.Node) {
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for i := range hosts {
		sb, n := hosts[i].Sandbox, byName[hosts[i].Node]
		if sb == nil || sb.Image == "" || n == nil {
			continue
		}
		want := normalRef(sb.Image)
		present := false
		for _, img := range n.Status.Images {
			for _, nm := range img.Names {
				if normalRef(nm) == want {
					present = true
				}
			}
		}
		if !present && len(n.Status.Images) >= DefaultNodeStatusMaxImages {
			continue
		}
		sb.Present = &present
	}
}

// registryOf is the registry host an image is pulled from.
func registryOf(ref string) string {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return "?"
	}
	return r.Context().RegistryStr()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
