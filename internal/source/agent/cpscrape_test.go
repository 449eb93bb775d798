package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An https endpoint with a self-signed certificate (as kube-scheduler's) gets the token and answers; the
// body is cut at the bound; a 403 names the RBAC the token lacks; plain http gets no token.
func TestScrape(t *testing.T) {
	var gotAuth []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") == "Bearer bad" {
			http.Error(w, "forbidden: User \"system:serviceaccount:x:default\" cannot get path \"/metrics\"", http.StatusForbidden)
			return
		}
		w.Write([]byte(strings.Repeat("metric 1\n", 100)))
	})
	tlsSrv := httptest.NewTLSServer(h)
	defer tlsSrv.Close()
	plain := httptest.NewServer(h)
	defer plain.Close()
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("good\n"), 0o600)
	o := ScrapeOptions{MaxBytes: 50, Timeout: 5 * time.Second, TokenFile: tok}

	var hd ScrapeHeader
	body, err := Scrape(context.Background(), &hd, tlsSrv.URL+"/metrics", o)
	if err != nil || hd.Status != 200 || !hd.Truncated || len(body) != 50 || hd.Bytes != 50 || hd.Reason != "" || gotAuth[0] != "Bearer good" {
		t.Fatalf("https: %+v %d bytes %v auth %q", hd, len(body), err, gotAuth)
	}
	hd = ScrapeHeader{}
	o.MaxBytes = 1 << 20
	if body, err := Scrape(context.Background(), &hd, plain.URL+"/metrics", o); err != nil || hd.Truncated || len(body) != 900 || gotAuth[1] != "" {
		t.Fatalf("http: %+v %d %v auth %q", hd, len(body), err, gotAuth)
	}
	os.WriteFile(tok, []byte("bad"), 0o600)
	hd = ScrapeHeader{}
	if _, err := Scrape(context.Background(), &hd, tlsSrv.URL+"/metrics", o); err != nil || hd.Status != 403 || !strings.Contains(hd.Reason, "system:monitoring") {
		t.Fatalf("403: %+v %v", hd, err)
	}
	hd = ScrapeHeader{}
	if _, err := Scrape(context.Background(), &hd, "http://127.0.0.1:1/metrics", o); err == nil {
		t.Fatalf("nothing listening: %+v", hd)
	}
}

func TestMetricsURL(t *testing.T) {
	for _, c := range []struct {
		comp  Component
		want  string
		err   string
		which string
	}{
		{Component{Name: CompEtcd, Flags: map[string]string{"listen-metrics-urls": "http://0.0.0.0:2381"}}, "http://127.0.0.1:2381/metrics", "", CompEtcd},
		{Component{Name: CompEtcd, Flags: map[string]string{"listen-metrics-urls": "unix://x,https://127.0.0.1:2382"}}, "https://127.0.0.1:2382/metrics", "", CompEtcd},
		{Component{Name: CompEtcd, Flags: map[string]string{"listen-metrics-urls": "unix://x"}}, "", "no http(s) URL", CompEtcd},
		{Component{Name: CompK3s, Flags: map[string]string{}}, "http://127.0.0.1:2381/metrics", "", CompEtcd},
		{Component{Name: CompK3s, Flags: map[string]string{"kube-scheduler:bind-address": "127.0.0.1"}}, "https://127.0.0.1:10259/metrics", "", CompScheduler},
		{Component{Name: CompController, Flags: map[string]string{"bind-address": "127.0.0.1"}}, "https://127.0.0.1:10257/metrics", "", CompController},
		{Component{Name: CompController, Flags: map[string]string{"secure-port": "0"}}, "", "serves no metrics", CompController},
		{Component{Name: CompScheduler, Flags: map[string]string{"bind-address": "::", "secure-port": "11259"}}, "https://127.0.0.1:11259/metrics", "", CompScheduler},
		{Component{Name: CompAPIServer, Flags: map[string]string{}}, "", "through the API", CompAPIServer},
	} {
		got, err := MetricsURL(&c.comp, c.which)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s %v: %q %v, want %q %q", c.comp.Name, c.comp.Flags, got, err, c.want, c.err)
		}
	}
}
