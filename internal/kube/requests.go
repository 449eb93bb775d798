package kube

import (
	"net/http"
	"sort"
	"strings"
	"sync"
)

// RequestCounter counts the requests kubeslow sends to the apiserver, by verb and resource, so a benchmark
// can report its own load on the cluster it measures.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[RequestKey]int
}

// RequestKey is a Kubernetes API verb (get, list, watch, create, update, patch, delete) and resource.
type RequestKey struct{ Verb, Resource string }

// Counts returns a copy of the counts, sorted by verb then resource.
func (c *RequestCounter) Counts() []RequestCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]RequestCount, 0, len(c.counts))
	for k, n := range c.counts {
		out = append(out, RequestCount{RequestKey: k, N: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Verb != out[j].Verb {
			return out[i].Verb < out[j].Verb
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// RequestCount is one verb and resource's count.
type RequestCount struct {
	RequestKey
	N int
}

// Wrap returns a round tripper that counts every request it passes on (for rest.Config.Wrap).
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		k := Classify(r.Method, r.URL.Path, r.URL.Query().Get("watch"))
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[RequestKey]int{}
		}
		c.counts[k]++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
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
