// Package audit is `kubeslow audit FILE|DIR…`: who loads the apiserver, from its audit logs.
package audit

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure/apiaudit"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
	"github.com/kubeslow/kubeslow/internal/version"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NewCommand returns `kubeslow audit`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	var top int
	var since, until, failOn string
	cmd := &cobra.Command{
		Use:   "audit FILE|DIR...",
		Short: "Who loads the apiserver: top clients, LIST and 409 sources, from audit logs (JSON lines, gzip, rotated sets)",
		Long: `audit reads apiserver audit logs (JSON lines, gzip, rotated sets) and names who loads the apiserver: top
clients, LIST and 409 sources, evaluated by the audit rules.

Exit codes (as run's): 0 no finding at or above --fail-on, 1 findings, 2 could not run (unreadable input, or no
audit event in it).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			sev, err := result.ParseSeverity(failOn)
			if err != nil {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--fail-on: %w", err)}
			}
			a := auditlog.NewAnalyzer()
			for _, b := range []struct {
				flag string
				dst  *time.Time
			}{{since, &a.From}, {until, &a.To}} {
				if b.flag == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339, b.flag)
				if err != nil {
					return &common.ExitError{Code: 2, Err: fmt.Errorf("--since/--until want RFC 3339 times (2026-11-22T10:00:00Z): %w", err)}
				}
				*b.dst = t
			}
			files, err := auditlog.Expand(args)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			start := time.Now()
			st, err := auditlog.Read(common.Context(cmd), files, a.Add, func(s auditlog.Stats) {
				el := time.Since(start).Seconds()
				streams.Progressf("read %d MB, %d lines (%.0f lines/s)", s.Bytes>>20, s.Lines, float64(s.Lines)/el)
			})
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			res := a.Result(top)
			auditlog.StatsMetrics(&res, st)
			v, commit := version.Get()
			rep := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "audit-" + start.UTC().Format("20060102-150405"),
				Tool: result.Tool{Name: "kubeslow", Version: v, Commit: commit}, Cluster: result.Cluster{Name: "audit log", Server: files[0]},
				Start: start.UTC(), End: time.Now().UTC(), Results: []result.Result{res}}
			rep.Findings, rep.Rules = rule.Evaluate(rep, apiaudit.Rules())
			if rep.Findings == nil {
				rep.Findings = []result.Finding{}
			}
			streams.Progressf("%d files, %d MB, %d events, %d unreadable lines in %s", st.Files, st.Bytes>>20, st.Events, st.BadLines, time.Since(start).Round(time.Millisecond))
			if err := out.Write(streams, rep); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			if !res.Status.Measured() {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("nothing measured: %s", res.Reason)}
			}
			if code := runner.ExitCode(rep, sev); code != 0 {
				return &common.ExitError{Code: code}
			}
			return nil
		},
	}
	out.Add(cmd)
	cmd.Flags().StringVar(&failOn, "fail-on", "warning", "lowest finding severity that makes the exit code 1: info, warning, error, critical")
	cmd.Flags().IntVar(&top, "top", 10, "how many clients and objects to list")
	cmd.Flags().StringVar(&since, "since", "", "only requests received at or after this time (RFC 3339)")
	cmd.Flags().StringVar(&until, "until", "", "only requests received at or before this time (RFC 3339)")
	return cmd
}
