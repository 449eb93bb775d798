package agentproto

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitServed polls GET url every 250 ms, for at most timeout, until it is answered the way kubeslow's own
// servers answer any path (the node agent's and the lab's test backend): 404 with an empty body. A proxy in
// front (an ingress, a Service) answers otherwise, or not at all, until its route to that server is in place.
// The error says the last answer seen.
func WaitServed(ctx context.Context, url string, timeout time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	last := "none"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = fmt.Sprintf("%s with Content-Length %d", resp.Status, resp.ContentLength)
		return resp.StatusCode == http.StatusNotFound && resp.ContentLength == 0, nil
	})
	if err != nil {
		return fmt.Errorf("GET %s did not reach the backend within %s (last answer: %s): %w", url, timeout, last, err)
	}
	return nil
}
