package watch

import (
	"bytes"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubeslow/kubeslow/internal/report"
)

// Handler serves the watch's state:
//
//	/metrics   Prometheus text exposition (see collector)
//	/          the latest report that reached the cluster, as the HTML report
//	/history   the last cycles as JSON summaries, newest first
//	/healthz   200 while the process serves
func (w *Watcher) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{w})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /{$}", w.serveReport)
	mux.HandleFunc("GET /history", w.serveHistory)
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = rw.Write([]byte("ok\n"))
	})
	return mux
}

func (w *Watcher) serveReport(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	rep := w.last // a report is never changed once recorded
	w.mu.Unlock()
	if rep == nil {
		http.Error(rw, "no cycle has reached the cluster yet; see /history and /metrics", http.StatusServiceUnavailable)
		return
	}
	var b bytes.Buffer
	if err := report.WriteHTML(&b, rep); err != nil {
		http.Error(rw, "rendering the report: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = rw.Write(b.Bytes())
}

func (w *Watcher) serveHistory(rw http.ResponseWriter, _ *http.Request) {
	w.mu.Lock()
	b := w.history.json()
	w.mu.Unlock()
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(b)
}
