package kubelet

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParsePulled(t *testing.T) {
	for _, c := range []struct {
		msg         string
		image       string
		pull, total time.Duration
		bytes       int64
	}{
		{`Successfully pulled image "198.19.255.1:5000/lab/small:1" in 2.948s (17.442s including waiting). Image size: 34603214 bytes.`,
			"198.19.255.1:5000/lab/small:1", 2948 * time.Millisecond, 17442 * time.Millisecond, 34603214},
		{`Successfully pulled image "g1g1/py-kube" in 1m5.981s (1m5.981s including waiting). Image size: 129338587 bytes.`,
			"g1g1/py-kube", 65981 * time.Millisecond, 65981 * time.Millisecond, 129338587},
		{`Successfully pulled image "x" in 407ms (407ms including waiting)`, "x", 407 * time.Millisecond, 407 * time.Millisecond, 0},
	} {
		img, pull, total, bytes, ok := ParsePulled(c.msg)
		if !ok || img != c.image || pull != c.pull || total != c.total || bytes != c.bytes {
			t.Errorf("%q: %q %v %v %d %v", c.msg, img, pull, total, bytes, ok)
		}
	}
	for _, bad := range []string{`Container image "x" already present on machine`, `Successfully pulled image "x" in 2s`,
		`Successfully pulled image "x" in 2q (3s including waiting)`} {
		if _, _, _, _, ok := ParsePulled(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParsePulled(f *testing.F) {
	f.Add(`Successfully pulled image "a/b:1" in 2.948s (17.442s including waiting). Image size: 34603214 bytes.`)
	f.Add(`Successfully pulled image "x" in 1m5.981s (1m5.981s including waiting)`)
	f.Fuzz(func(t *testing.T, msg string) {
		img, pull, total, bytes, ok := ParsePulled(msg)
		if ok && (pull < 0 || total < 0 || bytes < 0 || strings.Contains(img, `"`)) {
			t.Fatalf("%q: %q %v %v %d", msg, img, pull, total, bytes)
		}
	})
}

func pulledEvent(node, pod, msg string, at time.Time) corev1.Event {
	return corev1.Event{Reason: "Pulled", Message: msg, Source: corev1.EventSource{Component: "kubelet", Host: node},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod}, LastTimestamp: metav1.NewTime(at)}
}

// TestLongestWaits: the small pull that waited is matched with the big pull that ran meanwhile, not with a
// pull on another node or one that ran before.
func TestLongestWaits(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	var pulls []Pull
	for _, e := range []corev1.Event{
		pulledEvent("n1", "early", `Successfully pulled image "r/early:1" in 3s (3s including waiting). Image size: 1000 bytes.`, t0),
		pulledEvent("n1", "big", `Successfully pulled image "r/big:1" in 20s (20.1s including waiting). Image size: 17000000000 bytes.`, t0.Add(40*time.Second)),
		pulledEvent("n1", "small", `Successfully pulled image "r/small:1" in 1.2s (18.5s including waiting). Image size: 2000 bytes.`, t0.Add(41*time.Second)),
		pulledEvent("n2", "other", `Successfully pulled image "r/other:1" in 30s (30s including waiting). Image size: 3000 bytes.`, t0.Add(40*time.Second)),
		{Reason: "Pulled", Message: `Container image "r/x:1" already present on machine`, Source: corev1.EventSource{Host: "n1"}},
	} {
		if p, ok := PullOf(&e); ok {
			pulls = append(pulls, p)
		}
	}
	if len(pulls) != 4 {
		t.Fatalf("%d pulls", len(pulls))
	}
	q := LongestWaits(pulls)
	n1 := q["n1"]
	if n1.Pulls != 3 || n1.Waited.Pod != "small" || n1.Waited.Wait() != 17300*time.Millisecond || n1.Blocker.Image != "r/big:1" {
		t.Fatalf("n1: %+v", n1)
	}
	if n2 := q["n2"]; n2.Waited.Wait() != 0 || n2.Blocker.Image != "" {
		t.Errorf("n2 queued nothing: %+v", n2)
	}
	c, _ := ParseConfigz([]byte(`{"kubeletconfig":{"serializeImagePulls":false,"maxParallelImagePulls":1}}`))
	res := Analyze([]Node{{Name: "n1", Config: c}, {Name: "n2", Config: c}}, pulls, nil)
	m := res.Metric(MetricPullWait, map[string]string{"node": "n1"})
	if m == nil || m.Value != 17.3 || m.Labels["setting"] != "serializeImagePulls: false, maxParallelImagePulls: 1" ||
		!strings.HasPrefix(m.Labels["behind"], "r/big:1 (") {
		t.Errorf("n1 wait: %+v", m)
	}
	if m := res.Metric(MetricPullMax, map[string]string{"node": "n2"}); m == nil || m.Value != 30 {
		t.Errorf("n2 longest pull: %+v", m)
	}
}
