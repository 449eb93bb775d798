// Package common holds what every subcommand shares: I/O streams, the -o flag and report output.
package common

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

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

// OutputFlag is the -o/--output flag of every command that produces results.
type OutputFlag struct{ Format string }

// Add registers -o on cmd.
func (o *OutputFlag) Add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Format, "output", "o", "text", "output format: text, json (the versioned report), html (self-contained page with plots) or junit (XML for CI)")
}

// Validate checks the format name.
func (o *OutputFlag) Validate() error {
	switch o.Format {
	case "text", "json", "html", "junit":
		return nil
	}
	return fmt.Errorf("unknown output format %q (want text, json, html or junit)", o.Format)
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
