package kube

import (
	"context"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// RequestCounter counts the requests kubeslow sends to the apiserver and the response bytes it reads, by verb
// and resource and by the measurement that sent them (see WithMeasurement), so a benchmark can report its own
// load on the cluster it measures.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[attributedKey]*tally
}

type attributedKey struct {
	Measurement string
	RequestKey
}

type tally struct{ n, bytes int64 }

// RequestKey is a Kubernetes API verb (get, list, watch, create, update, patch, delete) and resource.
type RequestKey struct{ Verb, Resource string }

// RequestCount is one verb and resource's count of requests (N) and of response bytes read (Bytes: the
// body as the client decoded it, after any gzip; a watch's bytes up to now).
type RequestCount struct {
	RequestKey
	N     int
	Bytes int64
}

// MeasurementCount is what one measurement sent for one verb and resource; Measurement is empty for requests
// sent outside any measurement (discovery, preflight, the run's namespace).
type MeasurementCount struct {
	Measurement string
	RequestCount
}

type measurementKey struct{}

// WithMeasurement returns a context whose requests the counter attributes to the measurement name.
func WithMeasurement(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, measurementKey{}, name)
}

// MeasurementOf is the name WithMeasurement put in ctx, or "".
func MeasurementOf(ctx context.Context) string {
	s, _ := ctx.Value(measurementKey{}).(string)
	return s
}

// Counts returns the counts by verb and resource (every measurement together), sorted by verb then resource.
func (c *RequestCounter) Counts() []RequestCount {
	c.mu.Lock()
	sum := map[RequestKey]*RequestCount{}
	for k, t := range c.counts {
		rc := sum[k.RequestKey]
		if rc == nil {
			rc = &RequestCount{RequestKey: k.RequestKey}
			sum[k.RequestKey] = rc
		}
		rc.N += int(t.n)
		rc.Bytes += t.bytes
	}
	c.mu.Unlock()
	out := make([]RequestCount, 0, len(sum))
	for _, rc := range sum {
		out = append(out, *rc)
	}
	sort.Slice(out, func(i, j int) bool { return lessKey(out[i].RequestKey, out[j].RequestKey) })
	return out
}

// ByMeasurement returns the counts by measurement, verb and resource, sorted in that order.
func (c *RequestCounter) ByMeasurement() []MeasurementCount {
	c.mu.Lock()
	out := make([]MeasurementCount, 0, len(c.counts))
	for k, t := range c.counts {
		out = append(out, MeasurementCount{Measurement: k.Measurement, RequestCount: RequestCount{RequestKey: k.RequestKey, N: int(t.n), Bytes: t.bytes}})
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Measurement != out[j].Measurement {
			return out[i].Measurement < out[j].Measurement
		}
		return lessKey(out[i].RequestKey, out[j].RequestKey)
	})
	return out
}

func lessKey(a, b RequestKey) bool {
	if a.Verb != b.Verb {
		return a.Verb < b.Verb
	}
	return a.Resource < b.Resource
}

// Wrap returns a round tripper that counts every request it passes on, and the bytes of its response body as
// they are read (for rest.Config.Wrap).
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		k := attributedKey{Measurement: MeasurementOf(r.Context()), RequestKey: Classify(r.Method, r.URL.Path, r.URL.Query().Get("watch"))}
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[attributedKey]*tally{}
		}
		t := c.counts[k]
		if t == nil {
			t = &tally{}
			c.counts[k] = t
		}
		t.n++
		c.mu.Unlock()
		resp, err := rt.RoundTrip(r)
		// An upgraded connection (exec, port-forward: 101) keeps its body, a read-write stream the caller
		// type-asserts; its bytes are a pod's, not the apiserver's answer.
		if err == nil && resp.Body != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			resp.Body = &countingBody{ReadCloser: resp.Body, c: c, t: t}
		}
		return resp, err
	})
}

// countingBody adds what is read from a response body to its request's tally.
type countingBody struct {
	io.ReadCloser
	c *RequestCounter
	t *tally
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.c.mu.Lock()
		b.t.bytes += int64(n)
		b.c.mu.Unlock()
	}
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Classify maps an HTTP request on the Kubernetes API to its verb and resource the way the apiserver's
// request info does: /api/v1/namespaces/ns/pods is a list (or watch) of pods, …/pods/name a get of pods,
// …/pods/name/status a get of pods/status. Non-resource paths (/healthz, /metrics) keep their path.
func Classify(method, path, watchParam string) RequestKey {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return RequestKey{Verb: strings.ToLower(method), Resource: "/" + strings.Join(parts, "/")}
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:] // namespaced resource
	}
	resource, named := "", false
	switch len(rest) {
	case 0:
		resource = "discovery"
	case 1:
		resource = rest[0]
	case 2:
		resource, named = rest[0], true
	default:
		resource, named = rest[0]+"/"+strings.Join(rest[2:], "/"), true
	}
	verb := ""
	switch method {
	case http.MethodGet:
		switch {
		case watchParam == "true" || watchParam == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return RequestKey{Verb: verb, Resource: resource}
}
