package kube

import (
	"net/http"
	"net/http/httptest"
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

// TestRequestCounter sends real HTTP requests through the wrapped transport and checks the counts.
func TestRequestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	var c RequestCounter
	hc := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
	for _, p := range []string{"/api/v1/namespaces/a/pods", "/api/v1/namespaces/a/pods", "/api/v1/namespaces/a/pods?watch=true"} {
		resp, err := hc.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := c.Counts()
	want := []RequestCount{{RequestKey{"list", "pods"}, 2}, {RequestKey{"watch", "pods"}, 1}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}
