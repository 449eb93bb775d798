// Package agentimage makes kubeslow's agent image without a registry or a daemon: the static kubeslow binary
// packed as one layer with go-containerregistry. The lab writes such images as an archive that `ctr images
// import` reads (internal/lab/images); `kubeslow image push` pushes one to the user's registry, for the node
// agent and the DNS probes on a real cluster.
package agentimage

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// BinaryLayer is a single layer holding the binary at agentproto.Binary (/kubeslow), plus /tmp and /etc.
func BinaryLayer(binary string) (v1.Layer, error) { return FileLayer(binary, agentproto.Binary) }

// FileLayer is a single layer holding the static binary at path in the image, plus /tmp and /etc.
func FileLayer(binary, path string) (v1.Layer, error) {
	b, err := fileTar(binary, path)
	if err != nil {
		return nil, err
	}
	return static.NewLayer(b, types.OCIUncompressedLayer), nil
}

// fileTar is FileLayer's tar stream.
func fileTar(binary, path string) ([]byte, error) {
	if _, err := checkStatic(binary); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading %s for the image: %w", binary, err)
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, strings.TrimPrefix(path, "/"), data, 0o755, "etc/", "tmp/"); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DataLayer is a single layer holding one regular file (mode 0644) with content.
func DataLayer(file string, content []byte) v1.Layer {
	var buf bytes.Buffer
	_ = writeTar(&buf, file, content, 0o644) // writes to memory: cannot fail
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer)
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
	return WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}, entrypoint, layers...)
}

// WithPlatform returns an image for platform p of the given layers with an entrypoint.
func WithPlatform(p v1.Platform, entrypoint []string, layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config.Entrypoint = entrypoint
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cf)
}

// checkStatic refuses a dynamically linked binary (the image has no C library, so it could not start) and
// returns the binary's machine.
func checkStatic(binary string) (elf.Machine, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return 0, fmt.Errorf("%s is not an ELF binary: %w", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return 0, fmt.Errorf("%s is dynamically linked and cannot run in an image without a C library: build it with CGO_ENABLED=0 (make build does)", binary)
		}
	}
	return f.Machine, nil
}
