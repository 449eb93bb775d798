package images

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestPacedWriterLimitsRate(t *testing.T) {
	// 64 KiB at 256 KiB/s with a 16 KiB burst must take ~0.19 s; the limiter's own reservation tells how long it
	// had to wait, so the assertion does not depend on the machine's speed.
	lim := rate.NewLimiter(rate.Limit(256<<10), 16<<10)
	rec := httptest.NewRecorder()
	pw := &pacedWriter{ResponseWriter: rec, ctx: context.Background(), lim: lim}
	start := time.Now()
	n, err := pw.Write(make([]byte, 64<<10))
	if err != nil || n != 64<<10 || rec.Body.Len() != 64<<10 {
		t.Fatalf("wrote %d (%v), body %d", n, err, rec.Body.Len())
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("64 KiB at 256 KiB/s took %s: not paced", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pw = &pacedWriter{ResponseWriter: httptest.NewRecorder(), ctx: ctx, lim: rate.NewLimiter(1, 1)}
	if _, err := pw.Write(make([]byte, 10)); err == nil {
		t.Fatal("a cancelled request kept writing")
	}
}

// serve runs the registry on a loopback port until the test ends (checking that it stopped cleanly) and
// returns its address.
func serve(t *testing.T, bytesPerSec int64, latency time.Duration) string {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, t.TempDir(), bytesPerSec, latency, discardLogger()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

func TestRegistryServesV2(t *testing.T) {
	resp, err := http.Get("http://" + serve(t, 0, 0) + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v2/ = %d", resp.StatusCode)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestRegistrySeedNotDelayed: the registry's per-request latency holds pulls (a plain client gives up first)
// but not the lab's own seeding (SeedUserAgent), answered at once.
func TestRegistrySeedNotDelayed(t *testing.T) {
	addr := serve(t, 1, time.Hour)
	get := func(ua string, timeout time.Duration) error {
		rctx, rcancel := context.WithTimeout(context.Background(), timeout)
		defer rcancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/v2/ = %d", resp.StatusCode)
		}
		return nil
	}
	if err := get("containerd/2.0", 300*time.Millisecond); err == nil {
		t.Error("a pull's request was answered before the registry's hour of latency")
	}
	if err := get(SeedUserAgent+" go-containerregistry/v0.20", 30*time.Second); err != nil {
		t.Errorf("the seed's request: %v", err)
	}
}
