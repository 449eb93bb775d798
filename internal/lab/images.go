package lab

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// The lab's own images: the kubeslow binary (agents and probes run from it) and the pause image, which is
// the same binary with another entrypoint. Both are built locally and imported; nothing is pulled.
const (
	AgentImage = "kubeslow.local/kubeslow:lab"
	PauseImage = "kubeslow.local/pause:1"
)

// binaryLayer is a single layer holding the binary as /kubeslow, plus /tmp and /etc.
func binaryLayer(binary string) (v1.Layer, error) {
	if err := checkStatic(binary); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading %s for the lab image: %w", binary, err)
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, "kubeslow", data, 0o755, "etc/", "tmp/"); err != nil {
		return nil, err
	}
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer), nil
}

// writeTar writes a tar stream with the given directories and one file, with fixed times and owners so
// that the same content always gives the same layer digest.
func writeTar(w io.Writer, file string, content []byte, mode int64, dirs ...string) error {
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	for _, dir := range dirs {
		m := int64(0o755)
		if dir == "tmp/" {
			m = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: m, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: file, Mode: mode, Size: int64(len(content)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := tw.Write(content); err != nil {
		return err
	}
	return tw.Close()
}

// imageWith returns a linux/amd64 image of the given layers with an entrypoint.
func imageWith(entrypoint []string, layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = entrypoint
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cf)
}

// buildLabImages writes the agent and pause images as one tarball (docker archive format, which
// `ctr images import` reads) and returns its path.
func buildLabImages(d Dirs, binary string) (string, error) {
	layer, err := binaryLayer(binary)
	if err != nil {
		return "", err
	}
	agent, err := imageWith([]string{"/kubeslow"}, layer)
	if err != nil {
		return "", err
	}
	pause, err := imageWith([]string{"/kubeslow", "pause"}, layer)
	if err != nil {
		return "", err
	}
	refs := map[name.Reference]v1.Image{}
	for ref, img := range map[string]v1.Image{AgentImage: agent, PauseImage: pause} {
		t, err := name.NewTag(ref)
		if err != nil {
			return "", err
		}
		refs[t] = img
	}
	dir := filepath.Join(d.State, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "lab-images.tar")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		return "", fmt.Errorf("writing lab images: %w", err)
	}
	return path, f.Close()
}

// importImages loads the image tarball into a node's containerd (namespace k8s.io, where the CRI looks).
func importImages(ctx context.Context, sock, tarPath string) error {
	_, err := host.Run(ctx, 2*time.Minute, "ctr", "--address", sock, "-n", "k8s.io", "images", "import", "--no-unpack=false", tarPath)
	return err
}

// checkStatic refuses a dynamically linked binary: the image has no C library, so it could not start.
func checkStatic(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary: %w", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and cannot run in the lab's images: build it with CGO_ENABLED=0 (make build does)", binary)
		}
	}
	return nil
}
