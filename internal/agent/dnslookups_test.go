package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseResolvConf(t *testing.T) {
	c := ParseResolvConf([]byte("# kubelet\nsearch ns.svc.cluster.local svc.cluster.local\nnameserver 198.19.0.10\noptions ndots:5 timeout:2 attempts:9 single-request-reopen\n"))
	if c.Timeout != 2 || c.Attempts != 2 || len(c.Nameservers) != 1 || !c.Has("single-request-reopen") || !c.Has("ndots") || c.Has("use-vc") {
		t.Fatalf("%+v", c)
	}
	if d := ParseResolvConf(nil); d.Timeout != 5 || d.Attempts != 2 {
		t.Fatalf("defaults %+v", d)
	}
}

func FuzzParseResolvConf(f *testing.F) {
	f.Add([]byte("nameserver 1.2.3.4\noptions timeout:0 attempts:x use-vc\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseResolvConf(b)
		if c.Timeout < 1 || c.Timeout > 30 || c.Attempts < 1 || c.Attempts > 5 {
			t.Fatalf("%+v", c)
		}
	})
}

// TestLookupFor: every lookup is timed and its error kept; the workers stop asking once the duration is over.
func TestLookupFor(t *testing.T) {
	var n atomic.Int64
	lookup := func(ctx context.Context, name string) ([]string, error) {
		if n.Add(1)%2 == 0 {
			return nil, errors.New("i/o timeout")
		}
		return []string{"198.18.0.1"}, nil
	}
	s := LookupFor(context.Background(), lookup, []string{"a", "b"}, 50*time.Millisecond, 5*time.Millisecond, time.Second, 2)
	if len(s) < 4 || int64(len(s)) != n.Load() {
		t.Fatalf("%d samples of %d lookups", len(s), n.Load())
	}
	errs := 0
	for _, x := range s {
		if x.Error != "" {
			errs++
		}
		if x.Seconds < 0 || (x.Name != "a" && x.Name != "b") {
			t.Fatalf("%+v", x)
		}
	}
	if errs == 0 || errs == len(s) {
		t.Fatalf("%d errors of %d", errs, len(s))
	}
}
