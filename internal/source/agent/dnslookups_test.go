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

// TestLookupFor: every lookup is timed from its start and its error kept, and handed to each as it returns; the
// workers stop asking once the duration is over.
func TestLookupFor(t *testing.T) {
	var n atomic.Int64
	lookup := func(ctx context.Context, name string) ([]string, error) {
		if n.Add(1)%2 == 0 {
			return nil, errors.New("i/o timeout")
		}
		return []string{"198.18.0.1"}, nil
	}
	var streamed []LookupSample // each is called one at a time
	began := time.Now()
	s, skipped := LookupFor(context.Background(), lookup, []string{"a", "b"}, 50*time.Millisecond, 5*time.Millisecond, time.Second, 2,
		func(x LookupSample) { streamed = append(streamed, x) })
	if len(s) < 4 || int64(len(s)) != n.Load() || skipped != 0 {
		t.Fatalf("%d samples of %d lookups, %d skipped", len(s), n.Load(), skipped)
	}
	if len(streamed) != len(s) {
		t.Fatalf("%d samples streamed of %d", len(streamed), len(s))
	}
	for i, x := range streamed {
		if x != s[i] || x.Start.Before(began) || x.Start.After(time.Now()) {
			t.Fatalf("sample %d streamed %+v, kept %+v (began %s)", i, x, s[i], began)
		}
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

// TestLookupForOpenLoop: lookups start on schedule while earlier ones are still out, so slow lookups are as
// many as their share of the schedule (a closed loop would sample them less); beyond maxInFlight they are
// counted as skipped, not queued.
func TestLookupForOpenLoop(t *testing.T) {
	// A slow lookup is answered only by its time-out (150 ms, past the 100 ms schedule).
	lookup := func(ctx context.Context, name string) ([]string, error) {
		if name == "slow" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []string{"198.18.0.1"}, nil
	}
	s, skipped := LookupFor(context.Background(), lookup, []string{"slow", "fast"}, 100*time.Millisecond, 5*time.Millisecond, 150*time.Millisecond, 1000, nil)
	slow, fast := 0, 0
	for _, x := range s {
		if x.Name == "slow" {
			slow++
		} else {
			fast++
		}
	}
	if skipped != 0 || slow == 0 || slow < fast-1 || slow > fast+1 {
		t.Fatalf("slow %d fast %d skipped %d", slow, fast, skipped)
	}
	_, skipped = LookupFor(context.Background(), func(ctx context.Context, _ string) ([]string, error) { <-ctx.Done(); return nil, ctx.Err() },
		[]string{"x"}, 50*time.Millisecond, 5*time.Millisecond, 200*time.Millisecond, 2, nil)
	if skipped == 0 {
		t.Fatal("no lookup skipped with 2 in flight at most")
	}
}
