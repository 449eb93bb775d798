package lab

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab/images"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// The lab's own images: the kubeslow binary (agents and probes run from it) and the pause image, which is
// the same binary with another entrypoint. Both are built locally and imported; nothing is pulled.
const (
	AgentImage = "kubeslow.local/kubeslow:lab"
	PauseImage = "kubeslow.local/pause:1"
	// CoreDNSImage is the lab's CoreDNS binary (the one the lab builds) at /coredns, for cluster DNS run as a
	// Deployment (DNSSettings.Replicas).
	CoreDNSImage = "kubeslow.local/coredns:lab"
)

// buildLabImages writes the agent and pause images (and, given its binary, the CoreDNS image) as one archive in
// the state directory and returns its path; more are further images of their own binaries (Traefik's).
func buildLabImages(d Dirs, binary, coredns string, more ...images.Extra) (string, error) {
	path := filepath.Join(d.State, "images", "lab-images.tar")
	extra := append([]images.Extra(nil), more...)
	if coredns != "" {
		extra = append(extra, images.Extra{Ref: CoreDNSImage, Binary: coredns, Path: "/coredns", Entrypoint: []string{"/coredns"}})
	}
	return path, images.WriteArchive(path, binary, map[string][]string{AgentImage: {agentproto.Binary}, PauseImage: agentproto.Argv(agentproto.Pause{})}, extra...)
}

// importImages loads the lab images' archive into a node's containerd.
func importImages(ctx context.Context, sock, tarPath string) error {
	return images.Import(ctx, sock, tarPath)
}

// RegistryPort is where the lab registry listens on the control-plane address.
const RegistryPort = 5000

// RegistryHost is the registry's host:port, as image references name it.
func RegistryHost() string { return fmt.Sprintf("%s:%d", ControlPlaneIP, RegistryPort) }

// RegistryImage is a seeded image: the kubeslow binary plus a layer of incompressible padding.
type RegistryImage = images.Padded

// RegistryImages are the images every lab registry holds, of sizes that make pull behaviour visible
// (serialised pulls, a large image blocking small ones, pull deadlines).
func RegistryImages() []RegistryImage {
	h := RegistryHost()
	return []RegistryImage{
		{Ref: h + "/lab/small:1", PaddingSize: 1 << 20},
		{Ref: h + "/lab/medium:1", PaddingSize: 32 << 20},
		{Ref: h + "/lab/large:1", PaddingSize: 256 << 20},
	}
}

// ServeRegistry runs the lab registry on ln until ctx ends (images.Serve).
func ServeRegistry(ctx context.Context, ln net.Listener, dir string, bytesPerSec int64, latency time.Duration, log *slog.Logger) error {
	return images.Serve(ctx, ln, dir, bytesPerSec, latency, log)
}

// seedRegistry pushes RegistryImages into the running lab registry.
func seedRegistry(ctx context.Context, binary string) error {
	return images.Seed(ctx, binary, RegistryImages())
}
