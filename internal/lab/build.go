package lab

import (
	"context"

	"github.com/kubeslow/kubeslow/internal/lab/build"
)

// Pinned versions and component names (see internal/lab/build, which builds them).
const (
	KubernetesVersion = build.KubernetesVersion
	EtcdVersion       = build.EtcdVersion
	KwokVersion       = build.KwokVersion
	CoreDNSVersion    = build.CoreDNSVersion

	Etcd              = build.Etcd
	KubeAPIServer     = build.KubeAPIServer
	KubeControllerMgr = build.KubeControllerMgr
	KubeScheduler     = build.KubeScheduler
	Kubelet           = build.Kubelet
	KubeProxy         = build.KubeProxy
	Kwok              = build.Kwok
	CoreDNS           = build.CoreDNS
)

// Progress receives one line per step of a lab command.
type Progress = build.Progress

// Manifest records what `lab build` produced.
type Manifest = build.Manifest

// Build builds every lab component that is missing or fails verification into the lab's cache, and the
// optional ones named in with (build.Build).
func Build(ctx context.Context, d Dirs, progress Progress, with ...string) (*Manifest, error) {
	return build.Build(ctx, d.BuildCache(), progress, with...)
}

// OptionalComponents are the components Build builds only when named (build.Optional).
func OptionalComponents() []string { return build.Optional() }
