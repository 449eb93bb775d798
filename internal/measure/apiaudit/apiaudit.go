// Package apiaudit attributes apiserver load to clients from the apiserver's audit log over the
// measurement window, read from the files the user names (--audit-log; the node agent streams it where it runs);
// `kubeslow audit` reads saved logs offline.
package apiaudit

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Measurement reads the audit log for the events of its window.
type Measurement struct {
	Length time.Duration
	// Paths are audit log files or directories, as the user states them (--audit-log); none skips.
	Paths []string
	Top   int
}

// New returns the measurement.
func New(window time.Duration, paths []string) *Measurement {
	return &Measurement{Length: window, Paths: paths, Top: 10}
}

// Name implements measure.Measurement.
func (*Measurement) Name() string { return auditlog.Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("who loads the apiserver: top clients, LIST and 409 sources from the audit log, over %s", m.Length)
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

func (m *Measurement) files() ([]string, error) {
	if len(m.Paths) > 0 {
		return auditlog.Expand(m.Paths)
	}
	return nil, &measure.SkipError{Reason: "no audit log: pass --audit-log with the apiserver's audit log file or its directory (the file of its --audit-log-path, with the rotated ones), or run `kubeslow audit` on a copy",
		OutOfReach: []result.OutOfReach{measure.OutOfReachAudit}}
}

// Run observes the window on its own.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

// Start implements measure.Observer: the window's events are read at Gather. Tiers: the files the user
// named (--audit-log), else the log of kube-apiserver's --audit-log-path streamed by the node agent on a
// control-plane node from the position it had at the window's start, else out of reach with the node tier's
// reason.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	if len(m.Paths) == 0 {
		return m.startNodeTier(ctx, env)
	}
	files, err := m.files()
	if err != nil {
		return nil, err
	}
	return &observation{m: m, env: env, files: files, from: env.Clock.Now()}, nil
}

// UsesNodeTier implements measure.NodeTierUser: without --audit-log the log is streamed by the node agent.
func (m *Measurement) UsesNodeTier() bool { return len(m.Paths) == 0 }

// Bounds of the node tier's stream: the chunk of one exec and the window's total (the rest is left unread and
// said so; the parser reads what came).
const (
	AuditChunk    = 8 << 20
	AuditMaxTotal = 256 << 20
)

func (m *Measurement) startNodeTier(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	skip := func(err error) error {
		return &measure.SkipError{Reason: "no audit log: no --audit-log, and " + cpnode.Why(err),
			OutOfReach: []result.OutOfReach{cpnode.OutOfReach(measure.OutOfReachAudit, err)}}
	}
	tier, err := cpnode.From(ctx, env)
	if err != nil {
		return nil, skip(err)
	}
	node, end, err := FindAudit(ctx, tier)
	if err != nil {
		return nil, skip(err)
	}
	return &nodeObservation{m: m, env: env, tier: tier, node: node, path: end.Path, cur: end.Next, from: env.Clock.Now()}, nil
}

// FindAudit is the first of the tier's nodes whose apiserver writes an audit log, with the log's end (its
// path and the cursor to read the window's events from); the error is the last node's when none does.
func FindAudit(ctx context.Context, tier cpnode.Tier) (string, agentproto.AuditChunk, error) {
	var err error = &cpnode.Unreachable{Reason: cpnode.NoComponents, Detail: "no agent on a control-plane node"}
	for _, n := range tier.Nodes() {
		ch, e := tier.AuditLog(ctx, n, agent.AuditCursor{}, 0)
		if e == nil {
			return n, ch, nil
		}
		err = e
	}
	return "", agentproto.AuditChunk{}, err
}

type nodeObservation struct {
	m          *Measurement
	env        *measure.Env
	tier       cpnode.Tier
	node, path string
	cur        agent.AuditCursor
	from       time.Time
}

// Sample implements measure.Observation: the log is read once, at the end.
func (*nodeObservation) Sample(context.Context) {}

// Gather streams the log written during the window (at most AuditMaxTotal bytes) through the parser.
func (o *nodeObservation) Gather(ctx context.Context) (result.Result, error) {
	a := auditlog.NewAnalyzer()
	a.From, a.To = o.from, o.env.Clock.Now()
	st := auditlog.Stats{Files: 1}
	_, lost, err := o.tier.ReadAudit(ctx, o.node, o.cur, AuditChunk, AuditMaxTotal, func(b []byte) error {
		st.Bytes += int64(len(b))
		ParseLines(b, &st, o.path, a.Add)
		return nil
	})
	if err != nil {
		return result.Result{}, fmt.Errorf("reading the audit log %s on %s through the node agent: %w", o.path, o.node, err)
	}
	res := a.Result(o.m.Top)
	res.Start, res.End = a.From, a.To
	auditlog.StatsMetrics(&res, st)
	where := fmt.Sprintf("audit log %s (kube-apiserver's --audit-log-path) read by the node agent on %s", o.path, o.node)
	if lost {
		where += "; files were rotated out before they were read: events of the window are missing"
	}
	if st.Bytes >= AuditMaxTotal {
		where += fmt.Sprintf("; read bounded at %d MiB: the rest of the window is not counted", AuditMaxTotal>>20)
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: "audit_source", Unit: "count", Value: 1,
		Labels: map[string]string{"source": cpnode.SourceNodeAgent, "node": o.node, "file": o.path}})
	if res.Reason == "" {
		res.Reason = where
	} else {
		res.Reason = where + "; " + res.Reason
	}
	return res, nil
}

// ParseLines parses b's lines (whole lines, as the agent sends them) into fn, counting them in st; an
// unreadable line is counted and skipped (the first few kept), never fatal.
func ParseLines(b []byte, st *auditlog.Stats, file string, fn func(*auditlog.Event)) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		st.Lines++
		ev, err := auditlog.ParseLine(line)
		if err != nil {
			st.BadLines++
			if len(st.FirstBad) < 5 {
				st.FirstBad = append(st.FirstBad, auditlog.BadLine{File: file, Line: int(st.Lines), Err: err.Error()})
			}
			continue
		}
		st.Events++
		fn(&ev)
	}
}

type observation struct {
	m     *Measurement
	env   *measure.Env
	files []string
	from  time.Time
}

// Sample implements measure.Observation: the log is read once, at the end.
func (*observation) Sample(context.Context) {}

// Gather reads the events received during the window.
func (o *observation) Gather(ctx context.Context) (result.Result, error) {
	a := auditlog.NewAnalyzer()
	a.From, a.To = o.from, o.env.Clock.Now()
	st, err := auditlog.Read(ctx, o.files, a.Add, nil)
	if err != nil {
		return result.Result{}, err
	}
	res := a.Result(o.m.Top)
	res.Start, res.End = a.From, a.To
	auditlog.StatsMetrics(&res, st)
	return res, nil
}
