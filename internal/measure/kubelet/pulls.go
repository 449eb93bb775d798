package kubelet

import (
	"github.com/kubeslow/kubeslow/internal/stats"

	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Pull is one image pull a kubelet reported in a Pulled event: `Successfully pulled image "x" in 7.2s (13.1s
// including waiting). Image size: 34603008 bytes.` The first duration is the pull itself, timed by the
// kubelet's puller from the moment it started pulling; the second runs from the Pulling event, so it includes
// the time the request queued behind other pulls (serializeImagePulls: true, or maxParallelImagePulls taken).
type Pull struct {
	Node, Namespace, Pod, Image string
	// Done is when the kubelet reported the pull (the event's timestamp, 1 s precision).
	Done time.Time
	// Pull is the pull's own time; Total includes the wait for the puller.
	Pull, Total time.Duration
	// Bytes is the image's size as the kubelet reported it (0 when the message had none).
	Bytes int64
}

// Wait is the time the pull queued behind other pulls.
func (p Pull) Wait() time.Duration { return max(0, p.Total-p.Pull) }

var pulledMsg = regexp.MustCompile(`^Successfully pulled image "([^"]*)" in ([0-9.hmsuµn]+) \(([0-9.hmsuµn]+) including waiting\)(?:\. Image size: ([0-9]+) bytes)?`)

// ParsePulled parses a Pulled event's message (kubelet 1.28 and later); ok is false for any other message
// (e.g. "Container image ... already present on machine").
func ParsePulled(msg string) (image string, pull, total time.Duration, bytes int64, ok bool) {
	m := pulledMsg.FindStringSubmatch(msg)
	if m == nil {
		return "", 0, 0, 0, false
	}
	var err error
	if pull, err = time.ParseDuration(m[2]); err != nil || pull < 0 {
		return "", 0, 0, 0, false
	}
	if total, err = time.ParseDuration(m[3]); err != nil || total < 0 {
		return "", 0, 0, 0, false
	}
	if m[4] != "" {
		if bytes, err = strconv.ParseInt(m[4], 10, 64); err != nil {
			return "", 0, 0, 0, false
		}
	}
	return m[1], pull, total, bytes, true
}

// PullOf is the pull an event reports, if it is a kubelet's Pulled event with a duration.
func PullOf(e *corev1.Event) (Pull, bool) {
	if e.Reason != "Pulled" {
		return Pull{}, false
	}
	img, pull, total, bytes, ok := ParsePulled(e.Message)
	if !ok {
		return Pull{}, false
	}
	node := e.Source.Host
	if node == "" {
		node = e.ReportingInstance
	}
	done := e.LastTimestamp.Time
	if done.IsZero() {
		done = e.EventTime.Time
	}
	if done.IsZero() {
		done = e.FirstTimestamp.Time
	}
	return Pull{Node: node, Namespace: e.InvolvedObject.Namespace, Pod: e.InvolvedObject.Name, Image: img, Done: done,
		Pull: pull, Total: total, Bytes: bytes}, node != "" && !done.IsZero()
}

// ListPulls reads every Pulled event the cluster still holds (the apiserver keeps events for --event-ttl, an
// hour by default): one paginated, field-selected LIST across namespaces, 500 a page.
func ListPulls(ctx context.Context, c kubernetes.Interface) ([]Pull, error) {
	var out []Pull
	opts := metav1.ListOptions{FieldSelector: "reason=Pulled", Limit: 500}
	for {
		l, err := c.CoreV1().Events("").List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			if p, ok := PullOf(&l.Items[i]); ok {
				out = append(out, p)
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// Queued is the longest wait of a node's pulls and the pull that held the puller meanwhile.
type Queued struct {
	Waited Pull
	// Blocker is the pull that ran during most of the wait (zero when none of the node's reported pulls did:
	// its event expired, or the pull failed).
	Blocker Pull
	// Overlap is how long the blocker ran during the wait.
	Overlap time.Duration
	// Pulls is how many pulls the node reported; Longest the longest pull's own time.
	Pulls   int
	Longest time.Duration
}

// eventSlack is the events' timestamp precision: the kubelet's events carry whole seconds.
const eventSlack = time.Second

// LongestWaits returns, per node, the pull that waited longest for the puller and the pull that ran while it
// waited (pure).
func LongestWaits(pulls []Pull) map[string]Queued {
	byNode := map[string][]Pull{}
	for _, p := range pulls {
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	out := map[string]Queued{}
	for node, ps := range byNode {
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].Done.Before(ps[j].Done) })
		q := Queued{Pulls: len(ps)}
		for _, p := range ps {
			if p.Wait() > q.Waited.Wait() || q.Waited.Image == "" {
				q.Waited = p
			}
			q.Longest = max(q.Longest, p.Pull)
		}
		// The wait ran from Done-Total to Done-Pull; a pull ran from its Done-Pull to its Done.
		w := q.Waited
		ws, we := w.Done.Add(-w.Total), w.Done.Add(-w.Pull)
		for _, b := range ps {
			if b == w {
				continue
			}
			bs, be := b.Done.Add(-b.Pull), b.Done
			ov := stats.Earlier(we, be.Add(eventSlack)).Sub(stats.Later(ws, bs.Add(-eventSlack)))
			ov = min(ov, b.Pull, w.Wait())
			if ov > q.Overlap {
				q.Blocker, q.Overlap = b, ov
			}
		}
		out[node] = q
	}
	return out
}

// pullSetting names a kubelet's image-pull setting as its configuration says it.
func pullSetting(c *Config) string {
	if c == nil {
		return "unknown"
	}
	if c.SerializeImagePulls == nil || *c.SerializeImagePulls {
		return "serializeImagePulls: true"
	}
	if c.MaxParallelImagePulls != nil && *c.MaxParallelImagePulls > 0 {
		return fmt.Sprintf("serializeImagePulls: false, maxParallelImagePulls: %d", *c.MaxParallelImagePulls)
	}
	return "serializeImagePulls: false, maxParallelImagePulls unset (no limit)"
}
