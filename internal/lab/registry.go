package lab

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/time/rate"
)

// RegistryPort is where the lab registry listens on the control-plane address.
const RegistryPort = 5000

// RegistryHost is the registry's host:port, as image references name it.
func RegistryHost() string { return fmt.Sprintf("%s:%d", ControlPlaneIP, RegistryPort) }

// RegistryImage is a seeded image: the kubeslow binary plus a layer of incompressible padding.
type RegistryImage struct {
	Ref         string
	PaddingSize int64
}

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

// ServeRegistry runs an OCI registry (go-containerregistry's implementation, blobs on disk) on ln until ctx
// ends. Each request waits latency first; blob downloads are paced to bytesPerSec (0: unlimited), so that
// pulls take real time.
func ServeRegistry(ctx context.Context, ln net.Listener, dir string, bytesPerSec int64, latency time.Duration, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	reg := registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)), registry.Logger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if bytesPerSec > 0 && r.Method == http.MethodGet {
			w = &pacedWriter{ResponseWriter: w, ctx: r.Context(), lim: rate.NewLimiter(rate.Limit(bytesPerSec), int(min(bytesPerSec, 256<<10)))}
		}
		reg.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("lab registry serving", "addr", ln.Addr().String(), "dir", dir, "bytesPerSecond", bytesPerSec, "latency", latency)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// pacedWriter writes at most the limiter's rate.
type pacedWriter struct {
	http.ResponseWriter
	ctx context.Context
	lim *rate.Limiter
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), p.lim.Burst())
		if err := p.lim.WaitN(p.ctx, n); err != nil {
			return written, err
		}
		m, err := p.ResponseWriter.Write(b[:n])
		written += m
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// seedRegistry pushes RegistryImages (built on the kubeslow binary's layer) into the running registry.
func seedRegistry(ctx context.Context, binary string) error {
	base, err := binaryLayer(binary)
	if err != nil {
		return err
	}
	for _, ri := range RegistryImages() {
		pad := make([]byte, ri.PaddingSize)
		if _, err := io.ReadFull(rand.Reader, pad); err != nil {
			return err
		}
		padLayer := static.NewLayer(tarOf("padding", pad), types.OCIUncompressedLayer)
		img, err := imageWith([]string{"/kubeslow", "pause"}, base, padLayer)
		if err != nil {
			return err
		}
		ref, err := name.NewTag(ri.Ref, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("pushing %s: %w", ri.Ref, err)
		}
	}
	return nil
}

// tarOf is a tar stream holding one file.
func tarOf(file string, content []byte) []byte {
	var buf bytes.Buffer
	_ = writeTar(&buf, file, content, 0o644) // writes to memory: cannot fail
	return buf.Bytes()
}
