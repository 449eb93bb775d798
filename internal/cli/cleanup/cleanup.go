// Package cleanup is `kubeslow cleanup`: delete everything kubeslow created in a cluster.
package cleanup

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// NewCommand returns `kubeslow cleanup`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	var cf common.ClusterFlags
	var runID string
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete every object kubeslow created (all runs, or one with --run); never anything else",
		Long: `cleanup deletes every object carrying kubeslow's labels (app.kubernetes.io/managed-by=kubeslow, and
kubeslow.dev/run=ID with --run): the runs' namespaces (with what they hold), what a run left outside them, and
the cluster-scoped ClusterRoleBindings of the control-plane agent. An object without the labels is never
touched. A kind the user may not list or delete is skipped and said.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.Connect()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(c.Config)
			if err != nil {
				return err
			}
			rep, err := kube.Cleanup(common.Context(cmd), dyn, runID, streams.Logger(false))
			if rep != nil {
				kinds := make([]string, 0, len(rep.Deleted))
				for k := range rep.Deleted {
					kinds = append(kinds, k)
				}
				sort.Strings(kinds)
				for _, k := range kinds {
					fmt.Fprintf(streams.Out, "deleted %d %s\n", rep.Deleted[k], k)
				}
				for k, why := range rep.Skipped {
					fmt.Fprintf(streams.ErrOut, "skipped %s: %s\n", k, why)
				}
				if rep.Installed > 0 {
					fmt.Fprintf(streams.ErrOut, "left %d objects of `kubeslow watch install` in place (`kubeslow watch uninstall` removes them)\n", rep.Installed)
				}
				if len(rep.Deleted) == 0 && err == nil {
					fmt.Fprintln(streams.Out, "nothing to delete")
				}
			}
			return err
		},
	}
	cf.Add(cmd)
	cmd.Flags().StringVar(&runID, "run", "", "only the objects of this run id")
	return cmd
}
