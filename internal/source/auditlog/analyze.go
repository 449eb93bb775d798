package auditlog

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the audit result.
const Name = "api.audit"

// Metric names of the result: rules read them through these.
const (
	// MetricListShare is a client's share of all LIST requests (labels user, user_agent, resource).
	MetricListShare = "list_share"
	// MetricListsPerMinute is that client's LIST rate on that resource (same labels).
	MetricListsPerMinute = "lists_per_minute"
	// MetricConflictsPerMinute is a client's 409 rate on a resource (labels user, user_agent, resource, hot_object).
	MetricConflictsPerMinute = "conflicts_per_minute"
)

// Analyzer aggregates events; Add is called once per event, in order.
type Analyzer struct {
	// From and To bound the events counted (zero: unbounded).
	From, To time.Time

	first, last time.Time
	total       int64
	clients     map[string]*client
	conflicts   map[string]int64 // resource/object -> 409s
	perMinute   map[int64]*minute

	// lastMinute caches perMinute[lastMinuteKey] (events come in time order), lastClient the last event's
	// client; resources interns
	// "resource/subresource"; buf is scratch for map keys.
	lastMinute    *minute
	lastMinuteKey int64
	lastClient    *client
	resources     map[string]string
	buf           []byte
}

type client struct {
	user, agent          string
	requests, lists      int64
	conflicts, throttled int64
	listsByResource      map[string]int64
	conflictsByResource  map[string]int64
}

type minute struct{ requests, lists, conflicts int64 }

// NewAnalyzer returns an empty analyzer.
func NewAnalyzer() *Analyzer {
	return &Analyzer{clients: map[string]*client{}, conflicts: map[string]int64{}, perMinute: map[int64]*minute{}, resources: map[string]string{}}
}

// counted says whether an event is the one record of its request: ResponseComplete (or Panic), and for
// watches, which stay open, ResponseStarted.
func counted(ev *Event) bool {
	if ev.Verb == "watch" {
		return ev.Stage == "ResponseStarted"
	}
	return ev.Stage == "ResponseComplete" || ev.Stage == "Panic"
}

// AgentName is the client part of a user agent: the product token before the first space
// ("node-monitor/1.0 (linux/amd64) x" -> "node-monitor/1.0").
func AgentName(ua string) string {
	if i := strings.IndexByte(ua, ' '); i > 0 {
		return ua[:i]
	}
	if ua == "" {
		return "(none)"
	}
	return ua
}

// Add counts one event.
func (a *Analyzer) Add(ev *Event) {
	if !counted(ev) {
		return
	}
	if (!a.From.IsZero() && ev.Received.Before(a.From)) || (!a.To.IsZero() && ev.Received.After(a.To)) {
		return
	}
	if a.first.IsZero() || ev.Received.Before(a.first) {
		a.first = ev.Received
	}
	if ev.Received.After(a.last) {
		a.last = ev.Received
	}
	a.total++
	// Keys are built in a scratch buffer: a map look-up with string(buf) does not allocate, only a new key
	// is copied.
	agent := AgentName(ev.UserAgent)
	// Successive events often come from one client (and the parser's strings are shared, so comparing them
	// is cheap).
	c := a.lastClient
	if c == nil || c.user != ev.User || c.agent != agent {
		a.buf = append(append(append(a.buf[:0], ev.User...), 0), agent...)
		c = a.clients[string(a.buf)]
		if c == nil {
			c = &client{user: ev.User, agent: agent, listsByResource: map[string]int64{}, conflictsByResource: map[string]int64{}}
			a.clients[string(a.buf)] = c
		}
		a.lastClient = c
	}
	c.requests++
	mk := ev.Received.Unix() / 60
	m := a.lastMinute
	if m == nil || a.lastMinuteKey != mk {
		m = a.perMinute[mk]
		if m == nil {
			m = &minute{}
			a.perMinute[mk] = m
		}
		a.lastMinute, a.lastMinuteKey = m, mk
	}
	m.requests++
	res := ev.Resource
	if ev.Subresource != "" {
		a.buf = append(append(append(a.buf[:0], ev.Resource...), '/'), ev.Subresource...)
		if r, ok := a.resources[string(a.buf)]; ok {
			res = r
		} else {
			res = string(a.buf)
			a.resources[res] = res
		}
	}
	if ev.Verb == "list" {
		c.lists++
		c.listsByResource[res]++
		m.lists++
	}
	switch ev.Code {
	case 409:
		c.conflicts++
		c.conflictsByResource[res]++
		m.conflicts++
		obj := ev.Name
		if ev.Namespace != "" {
			obj = ev.Namespace + "/" + obj
		}
		a.conflicts[res+" "+obj]++
	case 429:
		c.throttled++
	}
}

// Result turns the aggregates into the measurement result: top clients, LIST shares, conflict sources and
// per-minute series.
func (a *Analyzer) Result(top int) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	mins := a.last.Sub(a.first).Minutes()
	if mins < 1.0/60 {
		mins = 1.0 / 60
	}
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	add("requests", "count", float64(a.total), nil)
	add("window", "seconds", mins*60, nil)
	clients := make([]*client, 0, len(a.clients))
	var lists int64
	for _, c := range a.clients {
		clients = append(clients, c)
		lists += c.lists
	}
	add("lists", "count", float64(lists), nil)
	sort.Slice(clients, func(i, j int) bool {
		if clients[i].requests != clients[j].requests {
			return clients[i].requests > clients[j].requests
		}
		return clients[i].agent < clients[j].agent
	})
	for i, c := range clients {
		if i == top {
			break
		}
		res.Records = append(res.Records, result.Record{ID: c.user + " | " + c.agent,
			Labels: map[string]string{"user": c.user, "user_agent": c.agent, "top_list_resource": topKey(c.listsByResource)},
			Values: map[string]float64{"requests": float64(c.requests), "lists": float64(c.lists), "conflicts": float64(c.conflicts), "throttled": float64(c.throttled),
				"requests_per_minute": float64(c.requests) / mins}})
	}
	// LIST attribution: each client's share of all LISTs, and its LIST rate on its top resource.
	byLists := append([]*client(nil), clients...)
	sort.Slice(byLists, func(i, j int) bool { return byLists[i].lists > byLists[j].lists })
	for i, c := range byLists {
		if i == 3 || c.lists == 0 {
			break
		}
		r := topKey(c.listsByResource)
		l := map[string]string{"user": c.user, "user_agent": c.agent, "resource": r}
		add(MetricListShare, "ratio", float64(c.lists)/float64(lists), l)
		add(MetricListsPerMinute, "per_minute", float64(c.listsByResource[r])/mins, l)
	}
	// Conflict sources.
	for _, c := range clients {
		for r, n := range c.conflictsByResource {
			add(MetricConflictsPerMinute, "per_minute", float64(n)/mins, map[string]string{"user": c.user, "user_agent": c.agent, "resource": r,
				"hot_object": a.hottest(r)})
		}
	}
	var hot []string
	for k := range a.conflicts {
		hot = append(hot, k)
	}
	sort.Slice(hot, func(i, j int) bool {
		return a.conflicts[hot[i]] > a.conflicts[hot[j]] || (a.conflicts[hot[i]] == a.conflicts[hot[j]] && hot[i] < hot[j])
	})
	for i, k := range hot {
		if i == top {
			break
		}
		r, obj, _ := strings.Cut(k, " ")
		add("conflicts_by_object", "count", float64(a.conflicts[k]), map[string]string{"resource": r, "object": obj})
	}
	// Per-minute series.
	var keys []int64
	for k := range a.perMinute {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, s := range []struct {
		name string
		get  func(*minute) int64
	}{{"requests_per_minute", func(m *minute) int64 { return m.requests }}, {"lists_per_minute", func(m *minute) int64 { return m.lists }},
		{"conflicts_per_minute", func(m *minute) int64 { return m.conflicts }}} {
		se := result.Series{Name: s.name, Unit: "per_minute"}
		for _, k := range keys {
			se.Points = append(se.Points, result.Point{T: time.Unix(k*60, 0).UTC(), V: float64(s.get(a.perMinute[k]))})
		}
		res.Series = append(res.Series, se)
	}
	if a.total == 0 {
		res.Reason = "no requests in the audit log for the window"
	}
	return res
}

// hottest is the object with the most 409s on a resource.
func (a *Analyzer) hottest(resource string) string {
	best, n := "", int64(0)
	for k, v := range a.conflicts {
		r, obj, _ := strings.Cut(k, " ")
		if r == resource && (v > n || (v == n && obj < best)) {
			best, n = obj, v
		}
	}
	return best
}

func topKey(m map[string]int64) string {
	best, n := "", int64(-1)
	for k, v := range m {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	return best
}

// StatsMetrics adds the read statistics (files, bytes, bad lines) to a result. An input with no readable
// event measured nothing: the result is Error when every line was unreadable, Skip when there was no line.
func StatsMetrics(res *result.Result, st Stats) {
	res.Metrics = append(res.Metrics,
		result.Metric{Name: "files", Unit: "count", Value: float64(st.Files)},
		result.Metric{Name: "bytes_read", Unit: "bytes", Value: float64(st.Bytes)},
		result.Metric{Name: "bad_lines", Unit: "count", Value: float64(st.BadLines)})
	if st.BadLines > 0 {
		var where []string
		for _, b := range st.FirstBad {
			where = append(where, fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Err))
		}
		note := fmt.Sprintf("%d unreadable lines skipped, first: %s", st.BadLines, strings.Join(where, "; "))
		if st.Events == 0 {
			res.Status, res.Reason = result.StatusError, fmt.Sprintf("no readable audit event in %d files: all %d lines unreadable, first: %s",
				st.Files, st.BadLines, strings.Join(where, "; "))
			return
		}
		if res.Reason != "" {
			note = res.Reason + "; " + note
		}
		res.Reason = note
		return
	}
	if st.Events == 0 {
		res.Status, res.Reason = result.StatusSkip, fmt.Sprintf("no audit event in %d files (%d bytes): nothing to analyse", st.Files, st.Bytes)
	}
}
