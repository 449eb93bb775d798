package dnsfacts

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/source/prom"
)

var t0 = time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)

func scrape(t *testing.T, name string, at time.Time) *prom.Snapshot {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := prom.Parse(bytes.NewReader(b), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplicaStats reads a CoreDNS scrape pair (the families and labels of CoreDNS 1.15's /metrics).
func TestReplicaStats(t *testing.T) {
	st := ReplicaStats(scrape(t, "coredns-before.txt", t0), scrape(t, "coredns-after.txt", t0.Add(20*time.Second)))
	if st.Requests != 1000 || st.Responses != 1000 || st.Errors != 120 || st.Rcodes["NXDOMAIN"] != 200 {
		t.Fatalf("counts %+v", st)
	}
	if st.CacheHits != 600 || st.CacheMisses != 400 || st.Panics != 0 || st.ForwardErrors != 120+3 {
		t.Fatalf("cache/forward %+v", st)
	}
	if !st.HasRequestP99 || st.RequestP99 < 0.05 || st.RequestP99 > 0.1 || !st.HasForwardP99 || st.ForwardP99 < 0.05 {
		t.Fatalf("p99 %+v", st)
	}
}

func TestProtection(t *testing.T) {
	own := map[string]string{"k8s-app": "kube-dns"}
	sel := &metav1.LabelSelector{MatchLabels: own}
	other := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cases := []struct {
		spec corev1.PodSpec
		want string
	}{
		{corev1.PodSpec{}, ""},
		{corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: "kubernetes.io/hostname"}}}}}},
			"preferred anti-affinity on kubernetes.io/hostname (weight 100)"},
		// Anti-affinity against other pods protects nothing.
		{corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: other, TopologyKey: "kubernetes.io/hostname"}}}}}, ""},
		{corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}}, "topology spread on topology.kubernetes.io/zone (maxSkew 1, DoNotSchedule)"},
	}
	for i, c := range cases {
		if got := Protection(&c.spec, own); got != c.want {
			t.Errorf("%d: %q, want %q", i, got, c.want)
		}
	}
}

func TestServerAndWorkload(t *testing.T) {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Labels: map[string]string{"pod-template-hash": "5d78c9869d"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "coredns-5d78c9869d", Controller: &yes}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "registry.k8s.io/coredns/coredns:v1.11.1"}}}}
	if ServerOf(p) != "CoreDNS" || workloadOf(p) != "Deployment kube-system/coredns" {
		t.Fatalf("%s %s", ServerOf(p), workloadOf(p))
	}
	p.Spec.Containers[0].Image = "registry.k8s.io/k8s-dns-kube-dns:1.22.20"
	if ServerOf(p) != "kube-dns" {
		t.Fatal(ServerOf(p))
	}
}

// TestAnalyzeNoPods: the lab's default CoreDNS is a process behind a managed EndpointSlice: no replica,
// the unbacked endpoint said, nothing per node.
func TestAnalyzeNoPods(t *testing.T) {
	res := Analyze(Facts{Service: "kube-system/kube-dns", Unbacked: []string{"198.18.0.1"}, Workload: "endpoints without pods (198.18.0.1)", RealNodes: 2})
	if m := res.Metric(MetricReplicas, nil); m == nil || m.Value != 0 {
		t.Fatalf("%+v", res.Metrics)
	}
	if res.Metric(MetricReplicasOnNode, nil) != nil || res.Records[0].Labels["endpoints_without_pods"] != "198.18.0.1" {
		t.Fatalf("%+v", res)
	}
}

// FuzzReplicaStats: any pair of inputs the parser accepts is read without a panic, and counts stay finite
// and non-negative.
func FuzzReplicaStats(f *testing.F) {
	for _, n := range []string{"coredns-before.txt", "coredns-after.txt"} {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("coredns_dns_responses_total{rcode=\"SERVFAIL\"} -1\n"))
	f.Add([]byte("# TYPE coredns_dns_request_duration_seconds histogram\ncoredns_dns_request_duration_seconds_bucket{le=\"0.1\"} 5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		after, err := prom.Parse(bytes.NewReader(b), t0)
		if err != nil {
			return
		}
		before, _ := prom.Parse(strings.NewReader("coredns_panics_total 0\n"), t0)
		st := ReplicaStats(before, after)
		_ = Analyze(Facts{Replicas: []Replica{{Pod: "a", Node: "n", Before: before, After: after}, {Pod: "b", Node: "n", Before: before, After: after}}, Window: time.Second})
		if st.Requests < 0 && !strings.Contains(string(b), "-") {
			t.Fatalf("negative requests from %q", b)
		}
	})
}

// TestRecordedReplica reads real CoreDNS 1.15 scrapes (hack/record-coredns.sh): replica a forwarded 2,000
// distinct names to an upstream that dropped what exceeded 100 q/s per source.
func TestRecordedReplica(t *testing.T) {
	st := ReplicaStats(scrape(t, "recorded-a-before.txt", t0), scrape(t, "recorded-a-after.txt", t0.Add(20*time.Second)))
	if st.Requests != 2000 || st.Responses != 2000 || st.Errors != 704 || st.Rcodes["SERVFAIL"] != 704 || st.CacheMisses != 2000 || st.CacheHits != 0 {
		t.Fatalf("%+v", st)
	}
	// The answered queries' forward latency is recorded; the dropped ones waited out the forward's deadline.
	if !st.HasForwardP99 || !st.HasRequestP99 || st.RequestP99 < 1 {
		t.Fatalf("p99 %+v", st)
	}
	b := ReplicaStats(scrape(t, "recorded-b-before.txt", t0), scrape(t, "recorded-b-after.txt", t0.Add(20*time.Second)))
	if b.Requests != 2000 || b.Errors != 0 || b.RequestP99 >= 1 {
		t.Fatalf("b %+v", b)
	}
	t.Logf("a: request p99 %.3f s forward p99 %.3f s; b: request p99 %.3f s forward p99 %.3f s", st.RequestP99, st.ForwardP99, b.RequestP99, b.ForwardP99)
}
