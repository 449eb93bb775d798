package images

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/time/rate"

	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// Padded is an image to seed: the kubeslow binary plus a layer of PaddingSize incompressible bytes.
type Padded struct {
	Ref         string
	PaddingSize int64
}

// SeedUserAgent starts the user agent of Seed's requests: the lab filling its own registry is not a pull, and
// Serve neither delays nor paces it (with the image-pull scenario's 1.5 s per request, a seed of ~20 requests
// took 35 s of every such lab's start).
const SeedUserAgent = "kubeslow-lab-seed"

// Serve runs an OCI registry (go-containerregistry's implementation, blobs on disk) on ln until ctx
// ends. Each request waits latency first; blob downloads are paced to bytesPerSec (0: unlimited), so that
// pulls take real time. The lab's own seeding (SeedUserAgent) is served at once.
func Serve(ctx context.Context, ln net.Listener, dir string, bytesPerSec int64, latency time.Duration, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	reg := registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)), registry.Logger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seed := strings.HasPrefix(r.UserAgent(), SeedUserAgent)
		if latency > 0 && !seed {
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if bytesPerSec > 0 && r.Method == http.MethodGet && !seed {
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
	log.Info("registry serving", "addr", ln.Addr().String(), "dir", dir, "bytesPerSecond", bytesPerSec, "latency", latency)
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

// Seed pushes imgs (built on binary's layer, each with its padding) into the running registry their
// references name.
func Seed(ctx context.Context, binary string, imgs []Padded) error {
	base, err := agentimage.BinaryLayer(binary)
	if err != nil {
		return err
	}
	for _, ri := range imgs {
		pad := make([]byte, ri.PaddingSize)
		if _, err := io.ReadFull(rand.Reader, pad); err != nil {
			return err
		}
		img, err := agentimage.With(agentproto.Argv(agentproto.Pause{}), base, agentimage.DataLayer("padding", pad))
		if err != nil {
			return err
		}
		ref, err := name.NewTag(ri.Ref, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithUserAgent(SeedUserAgent)); err != nil {
			return fmt.Errorf("pushing %s: %w", ri.Ref, err)
		}
	}
	return nil
}
