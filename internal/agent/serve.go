// Package agent is the server side of kubeslow's network benchmarks, in the same binary as the client so the
// lab's image and real clusters run one artefact (`kubeslow agent serve`).
package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// Handler answers every request the way case D's server did: read the body, answer 404 at once, no body.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusNotFound)
	})
}

// Serve runs the HTTP server on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
