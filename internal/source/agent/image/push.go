package agentimage

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// PushOptions say what `kubeslow image push` builds and how it reaches the registry.
type PushOptions struct {
	// Binary is the static kubeslow binary to pack (at agentproto.Binary, its entrypoint).
	Binary string
	// Platform is the image's platform, which must match the binary's machine (default linux/amd64).
	Platform string
	// Insecure allows a plain-HTTP registry (HTTPS is still tried first, its certificate verified).
	Insecure bool
	// Keychain resolves the registry's credentials (default authn.DefaultKeychain: the Docker config file
	// and its credential helpers).
	Keychain authn.Keychain
	// Transport is the HTTP transport (default remote's).
	Transport http.RoundTripper
}

// machines are the ELF machines of the platforms an image can be pushed for.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// Image is the agent image of the static binary for platform (os/arch, "" for linux/amd64): one gzipped layer
// with the binary at agentproto.Binary, its entrypoint. The binary must be static and built for the platform.
func Image(binary, platform string) (v1.Image, error) {
	if platform == "" {
		platform = "linux/amd64"
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, fmt.Errorf("--platform %q: %w", platform, err)
	}
	want, ok := machines[p.Architecture]
	if p.OS != "linux" || !ok {
		return nil, fmt.Errorf("--platform %q: want linux/amd64 or linux/arm64", platform)
	}
	m, err := checkStatic(binary)
	if err != nil {
		return nil, err
	}
	if m != want {
		return nil, fmt.Errorf("%s is built for %s, not for %s: build kubeslow with GOARCH=%s", binary, m, platform, p.Architecture)
	}
	b, err := fileTar(binary, agentproto.Binary)
	if err != nil {
		return nil, err
	}
	// Gzipped, unlike the lab's layers (imported from a local archive): a registry across a network gets about
	// half the bytes. The same tar stream gives the same compressed bytes, so the digest stays reproducible.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img, err := WithPlatform(*p, []string{agentproto.Binary}, layer)
	if err != nil {
		return nil, err
	}
	// An OCI manifest and config throughout, as the layer is (a registry may refuse a mix).
	return mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON), nil
}

// Push builds the agent image (Image) and pushes it to ref, and returns the reference by digest of what the
// registry holds.
func Push(ctx context.Context, ref string, o PushOptions) (name.Digest, error) {
	var opts []name.Option
	if o.Insecure {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(ref, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := Image(o.Binary, o.Platform)
	if err != nil {
		return name.Digest{}, err
	}
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc)}
	if o.Transport != nil {
		ropts = append(ropts, remote.WithTransport(o.Transport))
	}
	if err := remote.Write(tag, img, ropts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	dg, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return tag.Context().Digest(dg.String()), nil
}
