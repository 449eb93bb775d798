package explain

import (
	"testing"
	"time"
)

func TestParsePulled(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want Pulled
		ok   bool
	}{
		{`Successfully pulled image "nginx:1.27" in 3.2s (3.2s including waiting). Image size: 72099501 bytes.`,
			Pulled{Image: "nginx:1.27", Pull: 3200 * time.Millisecond, Total: 3200 * time.Millisecond, Waited: true, Bytes: 72099501}, true},
		{`Successfully pulled image "big:1" in 2s (22s including waiting). Image size: 50000000 bytes.`,
			Pulled{Image: "big:1", Pull: 2 * time.Second, Total: 22 * time.Second, Waited: true, Bytes: 50000000}, true},
		{`Successfully pulled image "x" in 1m5.981s (1m7.002s including waiting)`,
			Pulled{Image: "x", Pull: 65981 * time.Millisecond, Total: 67002 * time.Millisecond, Waited: true}, true},
		{`Successfully pulled image "old:1" in 407ms`, Pulled{Image: "old:1", Pull: 407 * time.Millisecond, Total: 407 * time.Millisecond}, true},
		{`Container image "registry.k8s.io/pause:3.10" already present on machine`, Pulled{Image: "registry.k8s.io/pause:3.10", Present: true}, true},
		{`Container image "app:1" already present on machine and can be accessed by the pod`, Pulled{Image: "app:1", Present: true}, true},
		{`Pulling image "x"`, Pulled{}, false},
		{`Successfully pulled image "x" in forever`, Pulled{}, false},
		{``, Pulled{}, false},
	} {
		got, ok := ParsePulled(c.msg)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v %v, want %+v %v", c.msg, got, ok, c.want, c.ok)
		}
	}
	if p, _ := ParsePulled(`Successfully pulled image "big:1" in 2s (22s including waiting). Image size: 50000000 bytes.`); p.Wait() != 20*time.Second || p.BytesPerSecond() != 25e6 {
		t.Errorf("wait %v, rate %v", p.Wait(), p.BytesPerSecond())
	}
}

// FuzzParsePulled: any message parses without a panic into non-negative times, a wait that is never negative,
// and a size that is never negative; an image present on the node took no time.
func FuzzParsePulled(f *testing.F) {
	for _, s := range []string{
		`Successfully pulled image "nginx:1.27" in 3.2s (3.2s including waiting). Image size: 72099501 bytes.`,
		`Successfully pulled image "x" in 2s (1s including waiting)`,
		`Successfully pulled image "x" in 407ms`,
		`Container image "x" already present on machine`,
		`Successfully pulled image "" in 0s (0s including waiting). Image size: 99999999999999999999 bytes.`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		p, ok := ParsePulled(msg)
		if !ok {
			if p != (Pulled{}) {
				t.Fatalf("not ok but %+v", p)
			}
			return
		}
		if p.Pull < 0 || p.Total < p.Pull || p.Bytes < 0 || p.Wait() < 0 || p.BytesPerSecond() < 0 {
			t.Fatalf("%q: %+v", msg, p)
		}
		if p.Present && (p.Pull != 0 || p.Total != 0 || p.Bytes != 0) {
			t.Fatalf("%q: present but %+v", msg, p)
		}
	})
}
