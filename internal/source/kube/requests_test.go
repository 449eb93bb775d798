package kube

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, path, watch string
		want                RequestKey
	}{
		{"GET", "/api/v1/namespaces/ns/pods", "", RequestKey{"list", "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods", "true", RequestKey{"watch", "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods/p1", "", RequestKey{"get", "pods"}},
		{"PUT", "/api/v1/namespaces/ns/pods/p1/status", "", RequestKey{"update", "pods/status"}},
		{"POST", "/api/v1/namespaces/ns/pods", "", RequestKey{"create", "pods"}},
		{"POST", "/api/v1/namespaces", "", RequestKey{"create", "namespaces"}},
		{"DELETE", "/api/v1/namespaces/ns", "", RequestKey{"delete", "namespaces"}},
		{"GET", "/api/v1/nodes", "", RequestKey{"list", "nodes"}},
		{"GET", "/api/v1/nodes/n1", "", RequestKey{"get", "nodes"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", "", RequestKey{"deletecollection", "deployments"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "", RequestKey{"patch", "deployments"}},
		{"GET", "/apis/apps/v1", "", RequestKey{"list", "discovery"}},
		{"GET", "/metrics", "", RequestKey{"get", "/metrics"}},
	} {
		if got := Classify(tc.method, tc.path, tc.watch); got != tc.want {
			t.Errorf("%s %s watch=%s: got %+v, want %+v", tc.method, tc.path, tc.watch, got, tc.want)
		}
	}
}

// TestRequestCounter sends real HTTP requests through the wrapped transport and checks the counts by verb and
// resource, the bytes of the bodies read (a body read to its end, one read in part), and the attribution to the
// measurement named in each request's context.
func TestRequestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("watch") == "true":
			_, _ = w.Write([]byte(strings.Repeat("w", 1000)))
		case strings.HasSuffix(r.URL.Path, "/pods"):
			_, _ = w.Write([]byte(strings.Repeat("p", 300)))
		default:
			_, _ = w.Write([]byte("nodes"))
		}
	}))
	defer srv.Close()
	var c RequestCounter
	hc := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
	get := func(ctx context.Context, p string, read int64) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if read < 0 {
			_, err = io.Copy(io.Discard, resp.Body)
		} else {
			_, err = io.CopyN(io.Discard, resp.Body, read)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	a := WithMeasurement(context.Background(), "a.one")
	get(a, "/api/v1/namespaces/a/pods", -1)
	get(a, "/api/v1/namespaces/a/pods?watch=true", 100) // a watch read in part: 100 bytes so far
	get(WithMeasurement(context.Background(), "b.two"), "/api/v1/namespaces/b/pods", -1)
	get(context.Background(), "/api/v1/nodes", -1)
	got := c.Counts()
	want := []RequestCount{{RequestKey{"list", "nodes"}, 1, 5}, {RequestKey{"list", "pods"}, 2, 600}, {RequestKey{"watch", "pods"}, 1, 100}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	gotM := c.ByMeasurement()
	wantM := []MeasurementCount{
		{"", RequestCount{RequestKey{"list", "nodes"}, 1, 5}},
		{"a.one", RequestCount{RequestKey{"list", "pods"}, 1, 300}},
		{"a.one", RequestCount{RequestKey{"watch", "pods"}, 1, 100}},
		{"b.two", RequestCount{RequestKey{"list", "pods"}, 1, 300}},
	}
	if !reflect.DeepEqual(gotM, wantM) {
		t.Errorf("by measurement %+v, want %+v", gotM, wantM)
	}
}

// TestRequestCounterUpgrade: an upgraded connection's body (exec, port-forward: 101) is passed on as it is, so
// that the caller can still write to it.
func TestRequestCounterUpgrade(t *testing.T) {
	var c RequestCounter
	body := struct{ io.ReadWriteCloser }{}
	rt := c.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Body: body}, nil
	}))
	req, _ := http.NewRequest(http.MethodPost, "http://x/api/v1/namespaces/n/pods/p/exec", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(io.ReadWriteCloser); !ok {
		t.Errorf("body of a 101 wrapped: %T", resp.Body)
	}
	if got := c.Counts(); len(got) != 1 || got[0].N != 1 || got[0].Verb != "create" || got[0].Resource != "pods/exec" {
		t.Errorf("counts %+v, want one create of pods/exec", got)
	}
}
