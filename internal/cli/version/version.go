// Package version is the `kubeslow version` command.
package version

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/version"
)

// Info is what `kubeslow version -o json` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// NewCommand returns the version command.
func NewCommand(streams common.IOStreams) *cobra.Command {
	out := common.OutputFlag{Formats: []string{"text", "json"}}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kubeslow's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			v, c := version.Get()
			info := Info{Version: v, Commit: c, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			if out.Format == "json" {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			_, err := fmt.Fprintf(streams.Out, "kubeslow %s (commit %s, %s, %s)\n", info.Version, orNone(info.Commit), info.GoVersion, info.Platform)
			return err
		},
	}
	out.Add(cmd)
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
