// Package images makes the lab's container images — the agent image of internal/source/agent/image, and others of
// static binaries — written as an archive that `ctr images import` reads, and serves and seeds the lab's OCI
// registry (go-containerregistry's, with paced downloads and added latency).
package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
)

// Extra is another image of an archive: a static binary of its own (Binary) at Path, run as Entrypoint.
type Extra struct {
	Ref, Binary, Path string
	Entrypoint        []string
}

// WriteArchive writes images of binary, one per reference with its entrypoint (refs: reference to
// entrypoint), sharing one layer, and the extra images, as one tarball (docker archive format, which
// `ctr images import` reads).
func WriteArchive(path, binary string, refs map[string][]string, extra ...Extra) error {
	layer, err := agentimage.BinaryLayer(binary)
	if err != nil {
		return err
	}
	imgs := map[name.Reference]v1.Image{}
	for ref, entrypoint := range refs {
		img, err := agentimage.With(entrypoint, layer)
		if err != nil {
			return err
		}
		t, err := name.NewTag(ref)
		if err != nil {
			return err
		}
		imgs[t] = img
	}
	for _, e := range extra {
		l, err := agentimage.FileLayer(e.Binary, e.Path)
		if err != nil {
			return err
		}
		img, err := agentimage.With(e.Entrypoint, l)
		if err != nil {
			return err
		}
		t, err := name.NewTag(e.Ref)
		if err != nil {
			return err
		}
		imgs[t] = img
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tarball.MultiRefWrite(imgs, f); err != nil {
		return fmt.Errorf("writing images: %w", err)
	}
	return f.Close()
}

// Import loads an image archive into the containerd at sock (namespace k8s.io, where the CRI looks).
func Import(ctx context.Context, sock, tarPath string) error {
	_, err := host.Run(ctx, 2*time.Minute, "ctr", "--address", sock, "-n", "k8s.io", "images", "import", "--no-unpack=false", tarPath)
	return err
}
