// Package agent is the server side of kubeslow's network benchmarks, in the same binary as the client so the
// lab's image and real clusters run one artefact (`kubeslow agent serve`).
package agent

import (
	"context"
	"encoding/binary"
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

// ServeTCP answers kubeslow's TCP tests on ln until ctx ends: the first byte of a connection chooses the
// stream test ('S': count bytes until the client half-closes, answer the count) or request/response ('R':
// echo each byte).
func ServeTCP(ctx context.Context, ln net.Listener) error {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go handleTCP(c)
	}
}

func handleTCP(c net.Conn) {
	defer c.Close()
	var mode [1]byte
	if _, err := io.ReadFull(c, mode[:]); err != nil {
		return
	}
	switch mode[0] {
	case 'S':
		n, err := io.Copy(io.Discard, c)
		if err != nil {
			return
		}
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		_, _ = c.Write(b[:])
	case 'R':
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		var b [1]byte
		for {
			if _, err := io.ReadFull(c, b[:]); err != nil {
				return
			}
			if _, err := c.Write(b[:]); err != nil {
				return
			}
		}
	}
}
