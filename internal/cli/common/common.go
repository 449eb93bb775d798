// Package common holds what every subcommand shares: I/O streams, the -o flag and report output.
package common

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// IOStreams are a command's standard streams. Results go to Out; progress and logs go to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Logger returns the logger commands use for progress: text on ErrOut.
func (s IOStreams) Logger(verbose bool) *slog.Logger {
	lvl := slog.LevelInfo
	if verbose {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(s.ErrOut, &slog.HandlerOptions{Level: lvl}))
}

// Progressf prints one progress line to ErrOut.
func (s IOStreams) Progressf(format string, args ...any) {
	fmt.Fprintf(s.ErrOut, format+"\n", args...)
}

// OutputFlag is the -o/--output flag of every command that produces results. Formats are the formats the
// command can produce: every report format when empty; a command that prints something other than a
// report (its status, its version) lists the ones it has, so that it never accepts one it cannot write.
type OutputFlag struct {
	Format  string
	Formats []string
}

// reportFormats are the formats of a report, with their help.
var reportFormats = []struct{ name, help string }{
	{"text", "text"}, {"json", "json (the versioned report)"}, {"html", "html (self-contained page with plots)"}, {"junit", "junit (XML for CI)"},
}

func (o *OutputFlag) formats() []string {
	if len(o.Formats) > 0 {
		return o.Formats
	}
	var all []string
	for _, f := range reportFormats {
		all = append(all, f.name)
	}
	return all
}

// Add registers -o on cmd.
func (o *OutputFlag) Add(cmd *cobra.Command) {
	var help []string
	for _, f := range o.formats() {
		h := f
		for _, rf := range reportFormats {
			if rf.name == f && len(o.Formats) == 0 {
				h = rf.help
			}
		}
		help = append(help, h)
	}
	cmd.Flags().StringVarP(&o.Format, "output", "o", "text", "output format: "+strings.Join(help, ", "))
}

// Validate checks the format name against what the command produces.
func (o *OutputFlag) Validate() error {
	for _, f := range o.formats() {
		if o.Format == f {
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q (want %s)", o.Format, strings.Join(o.formats(), ", "))
}

// Write renders r to s.Out in the chosen format.
func (o *OutputFlag) Write(s IOStreams, r *result.Report) error {
	switch o.Format {
	case "json":
		return result.Encode(s.Out, r)
	case "html":
		return report.WriteHTML(s.Out, r)
	case "junit":
		return report.WriteJUnit(s.Out, r)
	default:
		return report.WriteText(s.Out, r)
	}
}

// ExitError carries a process exit code through cobra to app.Main, the only place that exits.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Context returns cmd's context, never nil.
func Context(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// Finish is the end of every command that produces a report: a run that could not start exits 2 with its
// error; otherwise the report is written in the chosen format and turned into the exit code (Exit).
func Finish(s IOStreams, out *OutputFlag, rep *result.Report, err error, failOn result.Severity) error {
	if err != nil {
		return &ExitError{Code: runner.ExitCouldNotRun, Err: err}
	}
	if err := out.Write(s, rep); err != nil {
		return &ExitError{Code: runner.ExitCouldNotRun, Err: err}
	}
	return Exit(s, rep, failOn)
}

// Exit prints the report's summary line (how many measurements ran, were skipped, errored) on ErrOut and
// returns the exit code's error: 1 for findings at or above failOn, 2 with the reason when nothing was
// measured, nil otherwise.
func Exit(s IOStreams, rep *result.Report, failOn result.Severity) error {
	s.Progressf("%s, %d findings", rep.Tally(), len(rep.Findings))
	switch code, why := runner.Outcome(rep, failOn); code {
	case runner.ExitOK:
		return nil
	case runner.ExitCouldNotRun:
		return &ExitError{Code: code, Err: errors.New(why)}
	default:
		return &ExitError{Code: code}
	}
}
