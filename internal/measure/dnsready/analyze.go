package dnsready

import (
	"sort"
	"time"
)

// Backoff is a client's retry schedule: it waits Base after its first failed attempt, then Factor times
// longer after each further one, at most Cap (case A's lead: exponential back-off from 1 s).
type Backoff struct {
	Base   time.Duration
	Factor float64
	Cap    time.Duration
}

// DefaultBackoff is a common client default (client-go's and most RPC libraries' shape).
var DefaultBackoff = Backoff{Base: time.Second, Factor: 2, Cap: 5 * time.Minute}

// FirstSuccess returns when a client following b, which first asked at 0, first gets an answer from a name
// that resolves from at on: its first attempt at or after at.
func (b Backoff) FirstSuccess(at time.Duration) time.Duration {
	t, wait := time.Duration(0), b.Base
	for t < at {
		t += wait
		wait = min(time.Duration(float64(wait)*b.Factor), b.Cap)
	}
	return t
}

// Target is one pod whose DNS name was awaited.
type Target struct {
	Pod, Name string
	// Ready is when kubeslow saw the pod Ready; Endpoint when its address was ready in the Service's
	// EndpointSlice; Asked when the waiting client first asked for the name and Resolved when it first got
	// an answer (zero: never).
	Ready, Endpoint, Asked, Resolved time.Time
	Attempts, NXDomain               int
}

// Lags of one target: Ready -> resolvable, Ready -> endpoint published, endpoint -> resolvable (the last two
// only when the endpoint was seen: HasEndpoint).
type Lags struct {
	Pod                    string
	DNS, Endpoint, Serving time.Duration
	HasEndpoint            bool
	// Client is how long after Ready a client that asked when this one first did, and then retried on the
	// back-off schedule, first succeeds; Extra is how long after the name was resolvable that is.
	Client, Extra time.Duration
}

// Analyze computes the lags of the targets that became Ready and resolved; the others are counted.
func Analyze(ts []Target, b Backoff) (lags []Lags, unresolved int) {
	for _, t := range ts {
		if t.Ready.IsZero() || t.Resolved.IsZero() {
			unresolved++
			continue
		}
		l := Lags{Pod: t.Pod, DNS: t.Resolved.Sub(t.Ready)}
		if !t.Endpoint.IsZero() {
			l.Endpoint, l.Serving, l.HasEndpoint = t.Endpoint.Sub(t.Ready), t.Resolved.Sub(t.Endpoint), true
		}
		success := t.Asked.Add(b.FirstSuccess(t.Resolved.Sub(t.Asked)))
		l.Client, l.Extra = success.Sub(t.Ready), success.Sub(t.Resolved)
		lags = append(lags, l)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i].Pod < lags[j].Pod })
	return lags, unresolved
}
