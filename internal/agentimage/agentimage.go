// Package images makes the lab's container images without a registry or a daemon — a static binary packed as
// one layer with go-containerregistry, written as an archive that `ctr images import` reads — and serves and
// seeds the lab's OCI registry (go-containerregistry's, with paced downloads and added latency).
package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubeslow/kubeslow/internal/agentproto"
	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// BinaryLayer is a single layer holding the binary at agentproto.Binary (/kubeslow), plus /tmp and /etc.
func BinaryLayer(binary string) (v1.Layer, error) { return FileLayer(binary, agentproto.Binary) }

// FileLayer is a single layer holding the static binary at path in the image, plus /tmp and /etc.
func FileLayer(binary, path string) (v1.Layer, error) {
	if err := checkStatic(binary); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading %s for the lab image: %w", binary, err)
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, strings.TrimPrefix(path, "/"), data, 0o755, "etc/", "tmp/"); err != nil {
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

// With returns a linux/amd64 image of the given layers with an entrypoint.
func With(entrypoint []string, layers ...v1.Layer) (v1.Image, error) {
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

// Extra is another image of an archive: a static binary of its own (Binary) at Path, run as Entrypoint.
type Extra struct {
	Ref, Binary, Path string
	Entrypoint        []string
}

// WriteArchive writes images of binary, one per reference with its entrypoint (refs: reference to
// entrypoint), sharing one layer, and the extra images, as one tarball (docker archive format, which
// `ctr images import` reads).
func WriteArchive(path, binary string, refs map[string][]string, extra ...Extra) error {
	layer, err := BinaryLayer(binary)
	if err != nil {
		return err
	}
	imgs := map[name.Reference]v1.Image{}
	for ref, entrypoint := range refs {
		img, err := With(entrypoint, layer)
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
		l, err := FileLayer(e.Binary, e.Path)
		if err != nil {
			return err
		}
		img, err := With(e.Entrypoint, l)
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

// DataLayer is a single layer holding one regular file (mode 0644) with content.
func DataLayer(file string, content []byte) v1.Layer {
	var buf bytes.Buffer
	_ = writeTar(&buf, file, content, 0o644) // writes to memory: cannot fail
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer)
}
