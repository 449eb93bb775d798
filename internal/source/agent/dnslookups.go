package agent

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LookupSample is one lookup of DNSLookups: when it started, how long it took (seconds) and its error (""
// if it resolved).
type LookupSample struct {
	Name    string    `json:"name"`
	Start   time.Time `json:"start,omitzero"`
	Seconds float64   `json:"seconds"`
	Error   string    `json:"error,omitempty"`
}

// DNSLookups is what `probe dns-lookups` reports: every lookup, and the resolver that made them.
type DNSLookups struct {
	// Resolver names the client's resolver ("go": kubeslow's own, which reads /etc/resolv.conf as glibc does:
	// timeout, attempts, single-request, use-vc).
	Resolver string         `json:"resolver"`
	Conf     ResolvConf     `json:"resolv_conf"`
	Samples  []LookupSample `json:"samples"`
	// Skipped counts the lookups that were due while the most allowed were in flight.
	Skipped int `json:"skipped,omitempty"`
}

// LookupFor starts a lookup every interval for d, open loop (each in its own goroutine, whether or not the
// earlier ones have returned, so that slow lookups are sampled as often as fast ones: a closed loop would
// take fewer samples while its lookups wait out a time-out), the names in turn, at most maxInFlight at once (a
// lookup due while that many are out is counted as skipped); each is bounded by timeout, beyond the
// resolver's own retries, so that a lookup that waits out two of its time-outs is seen at 10 s. Lookups begun
// within d are waited for. each, when not nil, gets every sample as its lookup returns (one at a time).
func LookupFor(ctx context.Context, lookup Lookup, names []string, d, interval, timeout time.Duration, maxInFlight int, each func(LookupSample)) (samples []LookupSample, skipped int) {
	if len(names) == 0 || maxInFlight <= 0 || interval <= 0 {
		return nil, 0
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxInFlight)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.Now().Add(d)
	for k := 0; ctx.Err() == nil && time.Now().Before(end); k++ {
		select {
		case sem <- struct{}{}:
			name := names[k%len(names)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				lctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				t := time.Now()
				_, err := lookup(lctx, name)
				s := LookupSample{Name: name, Start: t, Seconds: time.Since(t).Seconds()}
				if err != nil {
					s.Error = err.Error()
				}
				mu.Lock()
				samples = append(samples, s)
				if each != nil {
					each(s)
				}
				mu.Unlock()
			}()
		default:
			skipped++
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	wg.Wait()
	return samples, skipped
}

// ResolvConf is what of /etc/resolv.conf decides how a lookup retries: its name servers, the time-out per try
// and the attempts (glibc's and Go's defaults 5 s and 2), and the options that change how A and AAAA are sent
// (single-request, single-request-reopen: glibc only, musl ignores them; use-vc: TCP).
type ResolvConf struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Timeout     float64  `json:"timeout_seconds"`
	Attempts    int      `json:"attempts"`
	Options     []string `json:"options,omitempty"`
}

// ParseResolvConf reads resolv.conf. Unknown lines and options are kept (options) or ignored (lines), as the
// resolvers do; a time-out or attempts option out of range keeps the default, as glibc does.
func ParseResolvConf(b []byte) ResolvConf {
	c := ResolvConf{Timeout: 5, Attempts: 2}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				c.Nameservers = append(c.Nameservers, f[1])
			}
		case "options":
			for _, o := range f[1:] {
				c.Options = append(c.Options, o)
				k, v, _ := strings.Cut(o, ":")
				n, err := strconv.Atoi(v)
				switch {
				case k == "timeout" && err == nil && n >= 1 && n <= 30:
					c.Timeout = float64(n)
				case k == "attempts" && err == nil && n >= 1 && n <= 5:
					c.Attempts = n
				}
			}
		}
	}
	return c
}

// Has reports whether the resolv.conf sets option o (by its name, without a value).
func (c ResolvConf) Has(o string) bool {
	for _, x := range c.Options {
		if k, _, _ := strings.Cut(x, ":"); k == o {
			return true
		}
	}
	return false
}
