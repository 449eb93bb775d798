// Package kubelet reads the kubelets' own endpoints through the apiserver's node proxy. Cadvisor is a run's
// one scrape of each real node's /metrics/cadvisor per window end, shared by every measurement that reads it
// (system.throttling and pods.resources): the first reader at a window end scrapes the node, the others
// reuse what it parsed (issue 44: each node's kubelet was read twice at each end, once by each).
package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// Families are the cAdvisor families kubeslow's live measurements read (the union of system.throttling's and
// pods.resources's): a scrape keeps these and drops the rest (a node's /metrics/cadvisor is thousands of
// series), so one parse serves every reader. A reader asking for a family not listed here is a programming
// error (Read panics); the readers' tests check their lists against this one.
var Families = []string{
	"container_cpu_cfs_periods_total",
	"container_cpu_cfs_throttled_periods_total",
	"container_cpu_cfs_throttled_seconds_total",
	"container_cpu_usage_seconds_total",
	"container_spec_cpu_quota",
	"container_spec_cpu_period",
	"container_memory_max_usage_bytes",
	"container_memory_working_set_bytes",
	"container_spec_memory_limit_bytes",
}

// Concurrency bounds the node-proxy reads in flight of one Read.
const Concurrency = 8

// End is one of a window's two ends.
type End int

const (
	// WindowStart is the observation's Start.
	WindowStart End = iota
	// WindowEnd is its Gather.
	WindowEnd
)

func (e End) String() string {
	if e == WindowStart {
		return "start"
	}
	return "end"
}

// Scrape is one node's /metrics/cadvisor at one window end, as one reader sees it.
type Scrape struct {
	// Snap holds the reader's families only, in a family index of its own (the families themselves are shared
	// between readers and read-only).
	Snap *prom.Snapshot
	text []byte // the response, Filter'ed to Families
}

// Text is the response's lines of families (Filter), what a recording keeps.
func (s Scrape) Text(families []string) []byte { return Filter(s.text, families) }

// Snaps is each node's snapshot.
func Snaps(m map[string]Scrape) map[string]*prom.Snapshot {
	out := make(map[string]*prom.Snapshot, len(m))
	for n, s := range m {
		out[n] = s.Snap
	}
	return out
}

// Texts is each node's Text(families).
func Texts(m map[string]Scrape, families []string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for n, s := range m {
		out[n] = s.Text(families)
	}
	return out
}

// Cadvisor is a run's scrapes of the kubelets' /metrics/cadvisor, one per node and window end, shared by
// its readers (singleflight: a reader asking while another scrapes the node waits for that scrape). A
// scrape is handed to each reader once: a reader asking again at the same end (the next window of a run
// that observes several) scrapes anew, as does one asking after the scrape is older than Read's maxAge. A
// failed scrape is not kept (the next reader tries again).
type Cadvisor struct {
	Client kubernetes.Interface

	mu      sync.Mutex
	entries map[key]*entry
	fetched int
	reused  int
}

type key struct {
	node string
	end  End
}

type entry struct {
	mu      sync.Mutex // held while scraping
	snap    *prom.Snapshot
	text    []byte
	readers map[string]bool // who was handed snap
}

// NewCadvisor returns an empty set of scrapes read through c.
func NewCadvisor(c kubernetes.Interface) *Cadvisor {
	return &Cadvisor{Client: c, entries: map[key]*entry{}}
}

// Read is each node's scrape at end for reader, keeping families (a subset of Families): the one already
// taken at this end when reader was not handed it yet and it is younger than maxAge, else a new one. A node
// that failed is in errs; forbidden is set when RBAC refused nodes/proxy.
func (c *Cadvisor) Read(ctx context.Context, reader string, end End, maxAge time.Duration, nodes, families []string) (scrapes map[string]Scrape, errs map[string]error, forbidden error) {
	for _, f := range families {
		if !slices.Contains(Families, f) {
			panic("kubelet: cAdvisor family " + f + " is not in kubelet.Families")
		}
	}
	scrapes, errs = map[string]Scrape{}, map[string]error{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(Concurrency)
	for _, n := range nodes {
		g.Go(func() error {
			s, err := c.read(ctx, reader, key{n, end}, maxAge, families)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[n] = err
				if apierrors.IsForbidden(err) {
					forbidden = err
				}
				return nil
			}
			scrapes[n] = s
			return nil
		})
	}
	_ = g.Wait()
	return scrapes, errs, forbidden
}

func (c *Cadvisor) read(ctx context.Context, reader string, k key, maxAge time.Duration, families []string) (Scrape, error) {
	c.mu.Lock()
	e := c.entries[k]
	if e == nil {
		e = &entry{}
		c.entries[k] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap != nil && !e.readers[reader] && time.Since(e.snap.At) <= maxAge {
		e.readers[reader] = true
		c.count(false)
		return e.view(families), nil
	}
	e.snap, e.text, e.readers = nil, nil, nil
	text, snap, err := Get(ctx, c.Client, k.node)
	if err != nil {
		return Scrape{}, err
	}
	e.snap, e.text, e.readers = snap, text, map[string]bool{reader: true}
	c.count(true)
	return e.view(families), nil
}

func (c *Cadvisor) count(fetched bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fetched {
		c.fetched++
	} else {
		c.reused++
	}
}

func (e *entry) view(families []string) Scrape {
	s := *e.snap
	s.Families = maps.Clone(e.snap.Families)
	s.Keep(families...)
	return Scrape{Snap: &s, text: e.text}
}

// Counts is how many scrapes were taken and how many times one was handed to another reader.
func (c *Cadvisor) Counts() (fetched, reused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetched, c.reused
}

// Get reads node's /metrics/cadvisor through the node proxy and keeps Families: the kept lines (Filter)
// and their parse, taken now.
func Get(ctx context.Context, c kubernetes.Interface, node string) ([]byte, *prom.Snapshot, error) {
	b, err := kube.NodeProxyGet(ctx, c, node, "metrics", "cadvisor")
	if err != nil {
		return nil, nil, err
	}
	b = Filter(b, Families)
	s, err := prom.Parse(bytes.NewReader(b), time.Now()) // none of Families: "no metrics in the response"
	if err != nil {
		return nil, nil, err
	}
	return b, s, nil
}

// Filter keeps the lines of a Prometheus text exposition that belong to families (their samples and their
// HELP and TYPE lines).
func Filter(text []byte, families []string) []byte {
	keep := map[string]bool{}
	for _, f := range families {
		keep[f] = true
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name := line
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			name = line[len("# HELP "):]
		}
		if i := strings.IndexAny(name, "{ "); i >= 0 {
			name = name[:i]
		}
		if keep[name] {
			out.WriteString(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
