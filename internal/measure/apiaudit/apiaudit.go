// Package apiaudit attributes apiserver load to clients from the apiserver's audit log over the
// measurement window, read from the files the user names (--audit-log; the node agent streams it where it runs);
// `kubeslow audit` reads saved logs offline.
package apiaudit

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/internal/auditlog"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
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

// Start implements measure.Observer: the window's events are read at Gather.
func (m *Measurement) Start(_ context.Context, env *measure.Env) (measure.Observation, error) {
	files, err := m.files()
	if err != nil {
		return nil, err
	}
	return &observation{m: m, env: env, files: files, from: env.Clock.Now()}, nil
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

// Rules are the rules over the audit analysis (rule.Source).
func (*Measurement) Rules() []rule.Rule { return auditlog.Rules() }
