package measure

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// SharedScrapes hands one scrape of a source to every measurement of a run that reads it in the same step:
// the apiserver's /metrics is read by api.responsiveness and controlplane.usage, etcd's by etcd.health and
// controlplane.usage, and each sampled every ObserveStep. A scrape younger than MaxAge is reused instead of
// fetched again; callers asking while one is in flight wait for it. A failed fetch is not kept (the next
// caller tries again). Each caller gets its own copy of the snapshot's family index, so adding or dropping
// families (Snapshot.Keep) does not reach the others; the families themselves are shared and read-only.
type SharedScrapes struct {
	Clock clock.Clock
	// MaxAge is how old a scrape may be to be handed out again (default half an ObserveStep).
	MaxAge time.Duration

	mu      sync.Mutex
	entries map[string]*sharedEntry
}

type sharedEntry struct {
	mu      sync.Mutex // held while fetching
	snap    *prom.Snapshot
	fetched time.Time
	fetches int
	reused  int
}

// NewSharedScrapes returns an empty cache on c.
func NewSharedScrapes(c clock.Clock) *SharedScrapes {
	return &SharedScrapes{Clock: c, MaxAge: ObserveStep / 2, entries: map[string]*sharedEntry{}}
}

// Get is the source key's snapshot: a fresh enough one already taken, else fetch's. A nil s always fetches.
func (s *SharedScrapes) Get(ctx context.Context, key string, fetch func(context.Context) (*prom.Snapshot, error)) (*prom.Snapshot, error) {
	if s == nil {
		return fetch(ctx)
	}
	s.mu.Lock()
	e := s.entries[key]
	if e == nil {
		e = &sharedEntry{}
		s.entries[key] = e
	}
	s.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap != nil && s.Clock.Since(e.fetched) <= s.MaxAge {
		e.reused++
		return clone(e.snap), nil
	}
	snap, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	e.snap, e.fetched = snap, s.Clock.Now()
	e.fetches++
	return clone(snap), nil
}

// Counts is how many times each source was fetched and how many times a scrape was handed out again.
func (s *SharedScrapes) Counts() (fetched, reused map[string]int) {
	fetched, reused = map[string]int{}, map[string]int{}
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.entries {
		e.mu.Lock()
		fetched[k], reused[k] = e.fetches, e.reused
		e.mu.Unlock()
	}
	return
}

func clone(s *prom.Snapshot) *prom.Snapshot {
	c := *s
	c.Families = maps.Clone(s.Families)
	return &c
}

// Scrape is s.Get on the run's shared scrapes (a fetch of its own when the run has none).
func (e *Env) Scrape(ctx context.Context, key string, fetch func(context.Context) (*prom.Snapshot, error)) (*prom.Snapshot, error) {
	return e.Scrapes.Get(ctx, key, fetch)
}

// APIServerMetrics is the apiserver's /metrics through the API (the replica that answered), shared by the
// run's measurements; a missing permission is a Skip.
func (e *Env) APIServerMetrics(ctx context.Context) (*prom.Snapshot, error) {
	return e.Scrape(ctx, ScrapeAPIServer, func(ctx context.Context) (*prom.Snapshot, error) {
		raw, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if apierrors.IsForbidden(err) {
			return nil, Skipf("no permission to GET /metrics on the apiserver (needs the nonResourceURLs /metrics get permission): %v", err)
		}
		if err != nil {
			return nil, fmt.Errorf("GET /metrics: %w", err)
		}
		return prom.Parse(bytes.NewReader(raw), e.Clock.Now())
	})
}

// Source keys of the shared scrapes.
const (
	// ScrapeAPIServer is the apiserver's /metrics through the API (the replica that answered).
	ScrapeAPIServer = "apiserver"
)

// ScrapeEtcdAt is the key of etcd's /metrics at the endpoint the user gave.
func ScrapeEtcdAt(endpoint string) string { return "etcd " + endpoint }

// ScrapeEtcdOn is the key of etcd's /metrics read by the node agent on node.
func ScrapeEtcdOn(node string) string { return "etcd@" + node }
