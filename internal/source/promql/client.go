// Package promql reads a Prometheus-compatible server (Prometheus, Thanos, Mimir, VictoriaMetrics) over its HTTP
// API with the ecosystem's own client (prometheus/client_golang's api/prometheus/v1) and its own HTTP client
// configuration (prometheus/common/config: bearer token, basic auth, TLS). Every query is bounded: a per-query
// time-out, a budget of queries per run, and a cap on the series one answer may hold. Errors say whether the
// server was unreachable, timed out, or rejected the query, and which query it was.
package promql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Defaults bounding one run's cost to the Prometheus server.
const (
	// DefaultTimeout is the time-out of one query.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxQueries is how many queries one run may send.
	DefaultMaxQueries = 80
	// DefaultMaxSeries is how many series one answer may hold; more is an error naming the query.
	DefaultMaxSeries = 2000
)

// Options say how to reach the server and how much one run may ask of it.
type Options struct {
	// URL is the server's base URL, e.g. http://prometheus.monitoring:9090 (or a Thanos/Mimir query URL with its
	// path prefix).
	URL string
	// BearerTokenFile holds a token sent as "Authorization: Bearer" (re-read on every request, as Prometheus does).
	BearerTokenFile string
	// BasicAuthUser and BasicAuthPasswordFile are HTTP basic auth credentials.
	BasicAuthUser         string
	BasicAuthPasswordFile string
	// TLS: a CA bundle, a client certificate and key, the name to verify, or no verification at all.
	CAFile, CertFile, KeyFile, ServerName string
	InsecureSkipVerify                    bool
	// Timeout bounds one query (0: DefaultTimeout); MaxQueries and MaxSeries bound the run (0: the defaults).
	Timeout    time.Duration
	MaxQueries int
	MaxSeries  int
}

// Client sends bounded queries and counts them.
type Client struct {
	api        v1.API
	url        string
	timeout    time.Duration
	maxQueries int
	maxSeries  int

	mu      sync.Mutex
	queries int
	samples int
}

// New validates o and returns a client. Nothing is sent yet.
func New(o Options) (*Client, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: want an http:// or https:// URL", o.URL)
	}
	if o.BearerTokenFile != "" && o.BasicAuthUser != "" {
		return nil, errors.New("a bearer token and basic auth are exclusive: give one")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate and key files")
	}
	hc := config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile,
		ServerName: o.ServerName, InsecureSkipVerify: o.InsecureSkipVerify}, FollowRedirects: true, EnableHTTP2: true}
	if o.BearerTokenFile != "" {
		hc.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: o.BearerTokenFile}
	}
	if o.BasicAuthUser != "" {
		hc.BasicAuth = &config.BasicAuth{Username: o.BasicAuthUser, PasswordFile: o.BasicAuthPasswordFile}
	}
	if err := hc.Validate(); err != nil {
		return nil, fmt.Errorf("prometheus client settings: %w", err)
	}
	rt, err := config.NewRoundTripperFromConfig(hc, "kubeslow")
	if err != nil {
		return nil, fmt.Errorf("prometheus client settings: %w", err)
	}
	c, err := api.NewClient(api.Config{Address: o.URL, RoundTripper: rt})
	if err != nil {
		return nil, err
	}
	cl := &Client{api: v1.NewAPI(c), url: o.URL, timeout: o.Timeout, maxQueries: o.MaxQueries, maxSeries: o.MaxSeries}
	if cl.timeout <= 0 {
		cl.timeout = DefaultTimeout
	}
	if cl.maxQueries <= 0 {
		cl.maxQueries = DefaultMaxQueries
	}
	if cl.maxSeries <= 0 {
		cl.maxSeries = DefaultMaxSeries
	}
	return cl, nil
}

// MaxSeries is how many series one answer may hold.
func (c *Client) MaxSeries() int { return c.maxSeries }

// Grant raises the run's query budget by n: a measurement that splits a query into shards (one per batch of
// kubelets, so that no answer passes MaxSeries) asks for the shards beyond the one query it is counted for.
func (c *Client) Grant(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxQueries += max(n, 0)
}

// URL is the server's address.
func (c *Client) URL() string { return c.url }

// Cost returns how many queries were sent and how many samples came back.
func (c *Client) Cost() (queries, samples int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries, c.samples
}

// Error is a failed query: the query, and whether the server could not be reached, timed out, or rejected it.
type Error struct {
	URL, Query string
	// Kind is "unreachable", "timeout", "rejected" or "budget".
	Kind string
	Err  error
}

func (e *Error) Error() string {
	switch e.Kind {
	case "unreachable":
		return fmt.Sprintf("Prometheus at %s is unreachable: %v", e.URL, e.Err)
	case "timeout":
		return fmt.Sprintf("Prometheus at %s did not answer in time (query %s): %v", e.URL, e.Query, e.Err)
	case "budget":
		return fmt.Sprintf("query budget used up before %s: %v", e.Query, e.Err)
	}
	return fmt.Sprintf("Prometheus at %s rejected the query %s: %v", e.URL, e.Query, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func (c *Client) spend(q string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queries >= c.maxQueries {
		return &Error{URL: c.url, Query: q, Kind: "budget", Err: fmt.Errorf("at most %d queries per run", c.maxQueries)}
	}
	c.queries++
	return nil
}

func (c *Client) classify(ctx context.Context, q string, err error) error {
	var apiErr *v1.Error
	var netErr net.Error
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Error{URL: c.url, Query: q, Kind: "timeout", Err: fmt.Errorf("no answer within %s", c.timeout)}
	case errors.As(err, &apiErr) && apiErr.Type == v1.ErrTimeout:
		return &Error{URL: c.url, Query: q, Kind: "timeout", Err: err}
	case errors.As(err, &apiErr) && apiErr.Type == v1.ErrClient && strings.Contains(apiErr.Msg, "connect"):
		return &Error{URL: c.url, Query: q, Kind: "unreachable", Err: err}
	case errors.As(err, &apiErr):
		msg := err
		if apiErr.Detail != "" {
			msg = fmt.Errorf("%w (%s)", err, strings.TrimSpace(apiErr.Detail))
		}
		return &Error{URL: c.url, Query: q, Kind: "rejected", Err: msg}
	case errors.As(err, &netErr):
		return &Error{URL: c.url, Query: q, Kind: "unreachable", Err: err}
	}
	return &Error{URL: c.url, Query: q, Kind: "unreachable", Err: err}
}

func (c *Client) count(n int) {
	c.mu.Lock()
	c.samples += n
	c.mu.Unlock()
}

// do spends one query of the budget and runs it with the per-query time-out, classifying its error.
func (c *Client) do(ctx context.Context, q string, f func(context.Context) (model.Value, error)) (model.Value, error) {
	if err := c.spend(q); err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, err := f(qctx)
	if err != nil {
		return nil, c.classify(qctx, q, err)
	}
	return v, nil
}

// tooMany refuses an answer with more series than allowed.
// ErrTooManySeries is wrapped by the error of an answer past MaxSeries: a caller may split the query.
var ErrTooManySeries = errors.New("too many series")

func (c *Client) tooMany(q string, n int) error {
	if n > c.maxSeries {
		return &Error{URL: c.url, Query: q, Kind: "budget", Err: fmt.Errorf("%w: %d series in the answer, more than the %d allowed", ErrTooManySeries, n, c.maxSeries)}
	}
	return nil
}

// Instant evaluates q at t and returns its vector (a scalar answer becomes one sample without labels).
func (c *Client) Instant(ctx context.Context, q string, t time.Time) (model.Vector, error) {
	v, err := c.do(ctx, q, func(ctx context.Context) (model.Value, error) {
		v, _, _, err := c.api.Query(ctx, q, t, v1.WithTimeout(c.timeout))
		return v, err
	})
	if err != nil {
		return nil, err
	}
	var out model.Vector
	switch x := v.(type) {
	case model.Vector:
		out = x
	case *model.Scalar:
		out = model.Vector{&model.Sample{Metric: model.Metric{}, Value: x.Value, Timestamp: x.Timestamp}}
	default:
		return nil, &Error{URL: c.url, Query: q, Kind: "rejected", Err: fmt.Errorf("answer of type %s, want a vector", v.Type())}
	}
	if err := c.tooMany(q, len(out)); err != nil {
		return nil, err
	}
	c.count(len(out))
	return out, nil
}

// LabelValues returns the values of label among the series matching match in [start, end]: read from the
// index, without loading samples (the cheap way to find which jobs expose a series).
func (c *Client) LabelValues(ctx context.Context, label, match string, start, end time.Time) ([]string, error) {
	return c.LabelValuesUpTo(ctx, label, match, start, end, c.maxSeries)
}

// LabelValuesUpTo is LabelValues with its own bound on the values in the answer (e.g. every kubelet of a
// cluster, past MaxSeries).
func (c *Client) LabelValuesUpTo(ctx context.Context, label, match string, start, end time.Time, limit int) ([]string, error) {
	q := fmt.Sprintf("label values of %s for %s", label, match)
	var vals model.LabelValues
	_, err := c.do(ctx, q, func(ctx context.Context) (model.Value, error) {
		var err error
		vals, _, _, err = c.api.LabelValues(ctx, label, []string{match}, start, end)
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	if len(vals) > limit {
		return nil, &Error{URL: c.url, Query: q, Kind: "budget", Err: fmt.Errorf("%d values in the answer, more than the %d allowed", len(vals), limit)}
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	c.count(len(out))
	return out, nil
}

// Range evaluates q over r and returns its matrix.
func (c *Client) Range(ctx context.Context, q string, r v1.Range) (model.Matrix, error) {
	v, err := c.do(ctx, q, func(ctx context.Context) (model.Value, error) {
		v, _, _, err := c.api.QueryRange(ctx, q, r, v1.WithTimeout(c.timeout))
		return v, err
	})
	if err != nil {
		return nil, err
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, &Error{URL: c.url, Query: q, Kind: "rejected", Err: fmt.Errorf("answer of type %s, want a matrix", v.Type())}
	}
	if err := c.tooMany(q, len(m)); err != nil {
		return nil, err
	}
	n := 0
	for _, s := range m {
		n += len(s.Values)
	}
	c.count(n)
	return m, nil
}
