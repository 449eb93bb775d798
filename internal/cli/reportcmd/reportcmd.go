// Package reportcmd is `kubeslow report` (re-render a saved run) and `kubeslow diff` (compare two runs).
package reportcmd

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NewReport returns `kubeslow report`.
func NewReport(streams common.IOStreams) *cobra.Command {
	var out common.OutputFlag
	cmd := &cobra.Command{
		Use:   "report FILE.json",
		Short: "Re-render a saved report.json as text, json, html or junit",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			rep, err := load(args[0])
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			if err := out.Write(streams, rep); err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			return nil
		},
	}
	out.Add(cmd)
	return cmd
}

// NewDiff returns `kubeslow diff`.
func NewDiff(streams common.IOStreams) *cobra.Command {
	var format string
	tol := report.DefaultTolerance
	cmd := &cobra.Command{
		Use:   "diff BEFORE.json AFTER.json",
		Short: "Compare two runs (before and after a fix): new and gone findings, status changes, metrics that moved",
		Long: `diff compares two saved reports. A regression is a new finding, a result whose status got worse,
a latency (unit seconds) that grew or a rate (per second) that shrank by more than --tolerance.

Exit codes: 0 no regression, 1 regressions, 2 could not compare.`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if format != "text" && format != "json" && format != "html" {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("unknown output format %q (want text, json or html)", format)}
			}
			if tol < 0 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--tolerance %v: want >= 0", tol)}
			}
			a, err := load(args[0])
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			b, err := load(args[1])
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			d := report.Compare(a, b, tol)
			switch format {
			case "json":
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				err = enc.Encode(d)
			case "html":
				err = report.WriteDiffHTML(streams.Out, a, b, d)
			default:
				err = report.WriteDiffText(streams.Out, d)
			}
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			if d.Regressions() > 0 {
				return &common.ExitError{Code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "text", "output format: text, json or html (one self-contained page: the changes, and each plot with both runs' data)")
	cmd.Flags().Float64Var(&tol, "tolerance", tol, "relative change below which a metric counts as unchanged")
	return cmd
}

func load(path string) (*result.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := result.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
