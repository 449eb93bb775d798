package prom

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// MaxFetch is the most of a /metrics response Fetch reads: what follows is cut off (and parsed as far as it
// goes).
const MaxFetch = 64 << 20

// Unreachable is the error of a Fetch whose request went unanswered: no connection, no response, or the
// client's time-out. An answer that is not 200 OK, or not the text format, is another error.
type Unreachable struct {
	URL string
	Err error
}

func (u *Unreachable) Error() string { return u.Err.Error() }

func (u *Unreachable) Unwrap() error { return u.Err }

// Fetch is one scrape of url (a /metrics endpoint over plain HTTP, as the exporters and etcd's metrics port
// serve it) with c, stamped with now() once the response has come.
func Fetch(ctx context.Context, c *http.Client, url string, now func() time.Time) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, &Unreachable{URL: url, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, MaxFetch), now())
}
