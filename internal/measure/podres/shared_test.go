package podres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/kubelet"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Every family either measurement reads is one the shared scrape keeps.
func TestFamiliesShared(t *testing.T) {
	for _, f := range append(slices.Clone(podres.Families), throttle.Families...) {
		if !slices.Contains(kubelet.Families, f) {
			t.Errorf("%s is not in kubelet.Families", f)
		}
	}
}

// fakeKubelets is an apiserver whose real nodes' kubelets answer /metrics/cadvisor through the node proxy
// with a recorded scrape (podres's recorded-faults: the first for a node's first request, the last after, with
// a family no measurement reads), and which lists that recording's pods and Events.
type fakeKubelets struct {
	nodes       []string
	first, last []byte

	mu       sync.Mutex
	cadvisor map[string]int // requests by node
	podLists int
}

func (f *fakeKubelets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dir := ruletest.Path("internal/measure/podres/testdata/recorded-faults")
	items := func(file string) json.RawMessage {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			panic(err)
		}
		return b
	}
	list := func(kind string, items any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": "v1", "metadata": map[string]any{}, "items": items})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/api/v1/nodes":
		var nodes []corev1.Node
		for _, n := range f.nodes {
			nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		list("NodeList", nodes)
	case strings.HasPrefix(p, "/api/v1/nodes/") && strings.HasSuffix(p, "/proxy/metrics/cadvisor"):
		n := strings.TrimSuffix(strings.TrimPrefix(p, "/api/v1/nodes/"), "/proxy/metrics/cadvisor")
		f.cadvisor[n]++
		b := f.first
		if f.cadvisor[n] > 1 {
			b = f.last
		}
		_, _ = w.Write(b)
	case p == "/api/v1/pods":
		f.podLists++
		if f.podLists == 1 {
			list("PodList", items("pods-start.json"))
		} else {
			list("PodList", items("pods-end.json"))
		}
	case p == "/api/v1/events":
		list("EventList", items("events.json"))
	default:
		http.NotFound(w, r)
	}
}

// TestOneCadvisorScrapePerEnd: system.throttling and pods.resources observing the same window, as the runner
// runs them (both started, then both gathered, in the registry's order), cost each real node's kubelet one
// /metrics/cadvisor request per window end; and each result is what its own reads gave before the scrapes
// were shared (throttling parsed the whole response and kept its families; pods.resources filtered the text
// to its families, then parsed).
func TestOneCadvisorScrapePerEnd(t *testing.T) {
	dir := ruletest.Path("internal/measure/podres/testdata/recorded-faults")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	other := []byte("# HELP machine_cpu_cores Number of logical CPU cores.\n# TYPE machine_cpu_cores gauge\nmachine_cpu_cores 4\n")
	fk := &fakeKubelets{nodes: []string{"lab-node-1", "lab-node-2"}, cadvisor: map[string]int{},
		first: append(read("cadvisor-lab-node-1-first.txt"), other...), last: append(read("cadvisor-lab-node-1-last.txt"), other...)}
	srv := httptest.NewServer(fk)
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	env := &measure.Env{Client: c, Clock: clk, Scrapes: measure.NewSharedScrapes(clk), Cadvisor: kubelet.NewCadvisor(c)}
	ctx := context.Background()

	th, pr := throttle.New(time.Minute), podres.New(time.Minute)
	var rec podres.Recording
	pr.Record = func(r podres.Recording) { rec = r }
	var obs []measure.Observation
	for _, o := range []measure.Observer{th, pr} {
		ob, err := o.Start(ctx, env)
		if err != nil {
			t.Fatalf("%s: %v", o.Name(), err)
		}
		obs = append(obs, ob)
	}
	for _, n := range fk.nodes {
		if got := fk.cadvisor[n]; got != 1 {
			t.Errorf("%s: %d /metrics/cadvisor requests at the window's start, want 1", n, got)
		}
	}
	var got []result.Result
	for _, ob := range obs {
		res, err := ob.Gather(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res)
	}
	for _, n := range fk.nodes {
		if got := fk.cadvisor[n]; got != 2 {
			t.Errorf("%s: %d /metrics/cadvisor requests over the window's two ends, want 2", n, got)
		}
	}
	if fetched, reused := throttle.CadvisorOf(env).Counts(); fetched != 4 || reused != 4 {
		t.Errorf("the run's cAdvisor: %d scrapes, %d reused; want 4 and 4", fetched, reused)
	}

	// The same responses read each measurement's own way, at the times the shared scrapes were taken.
	parse := func(text []byte, at time.Time) *prom.Snapshot {
		s, err := prom.Parse(bytes.NewReader(text), at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	thFirst, thLast := map[string]*prom.Snapshot{}, map[string]*prom.Snapshot{}
	prFirst, prLast := map[string]*prom.Snapshot{}, map[string]*prom.Snapshot{}
	for _, n := range fk.nodes {
		a, b := rec.First[n], rec.Last[n]
		if a == nil || b == nil {
			t.Fatalf("%s: no scrape recorded", n)
		}
		thFirst[n], thLast[n] = parse(fk.first, a.At), parse(fk.last, b.At)
		thFirst[n].Keep(throttle.Families...)
		thLast[n].Keep(throttle.Families...)
		prFirst[n], prLast[n] = parse(podres.Filter(fk.first, podres.Families), a.At), parse(podres.Filter(fk.last, podres.Families), b.At)
		if !bytes.Equal(rec.FirstText[n], podres.Filter(fk.first, podres.Families)) || !bytes.Equal(rec.LastText[n], podres.Filter(fk.last, podres.Families)) {
			t.Errorf("%s: the recording's cAdvisor text is not the response's lines of podres.Families", n)
		}
	}
	if want := throttle.Analyze(thFirst, thLast); !reflect.DeepEqual(got[0], want) {
		t.Errorf("system.throttling:\n got %+v\nwant %+v", got[0], want)
	}
	in := rec.Input
	in.First, in.Last = prFirst, prLast
	if want := podres.Analyze(in); !reflect.DeepEqual(got[1], want) {
		t.Errorf("pods.resources:\n got %+v\nwant %+v", got[1], want)
	}
	if len(got[0].Metrics) == 0 || len(got[1].Metrics) == 0 {
		t.Errorf("nothing measured: %d and %d metrics", len(got[0].Metrics), len(got[1].Metrics))
	}
	t.Logf("throttling: %s", got[0].Reason)
	t.Logf("pods.resources: %s", got[1].Reason)

	// The next window of the same run scrapes anew at each end.
	for _, o := range []measure.Observer{th, pr} {
		if _, err := o.Start(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range fk.nodes {
		if got := fk.cadvisor[n]; got != 3 {
			t.Errorf("%s: %d requests after the next window's start, want 3", n, got)
		}
	}
}
