package lab

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/lab/storm"
)

func newScenarios(streams common.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the lab's fault scenarios (start one with `lab up --scenario NAME`)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(streams.Out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCENARIO\tCASE\tLAYOUTS\tEXPECTED FINDINGS\tWHAT IT DOES")
			for _, s := range scenario.All() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", s.Name, s.Case, strings.Join(s.Layouts, ","), s.Expect, s.Description)
			}
			return tw.Flush()
		},
	}
}

// newStorm is the hidden `lab storm` group: the scenarios' load generators, run as lab processes.
func newStorm(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "storm", Short: "Scenario load generators (run by `lab up --scenario`)", Hidden: true}
	var kubeconfig string
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "the lab's admin kubeconfig (default: the default lab's)")
	restConfig := func() (*rest.Config, error) {
		if kubeconfig != "" {
			return clientcmd.BuildConfigFromFlags("", kubeconfig)
		}
		d, err := lab.DefaultDirs()
		if err != nil {
			return nil, err
		}
		return lab.AdminRESTConfig(d)
	}
	var lo storm.ListOptions
	list := &cobra.Command{
		Use:  "list-events",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig()
			if err != nil {
				return err
			}
			counts, err := storm.ListEvents(common.Context(cmd), cfg, lo, streams.Logger(false))
			if counts != nil {
				streams.Progressf("list storm done: %s", counts)
			}
			return err
		},
	}
	list.Flags().IntVar(&lo.Clients, "clients", 20, "concurrent clients")
	list.Flags().DurationVar(&lo.Interval, "interval", time.Second, "interval between one client's LISTs")
	list.Flags().StringVar(&lo.UserAgent, "user-agent", "node-monitor/1.0", "user agent of the clients")
	list.Flags().IntVar(&lo.SeedEvents, "seed-events", 3000, "Events to create first")
	list.Flags().DurationVar(&lo.Duration, "duration", 30*time.Minute, "stop after this long")
	var co storm.ConflictOptions
	conflicts := &cobra.Command{
		Use:  "conflicts",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig()
			if err != nil {
				return err
			}
			counts, err := storm.Conflicts(common.Context(cmd), cfg, co, streams.Logger(false))
			if counts != nil {
				streams.Progressf("conflict storm done: %s", counts)
			}
			return err
		},
	}
	conflicts.Flags().IntVar(&co.Clients, "clients", 8, "racing writers")
	conflicts.Flags().IntVar(&co.Blocks, "blocks", 2, "shared IPAMBlock objects")
	conflicts.Flags().Float64Var(&co.QPS, "qps", 20, "attempts per second per client")
	conflicts.Flags().StringVar(&co.UserAgent, "user-agent", "calico-ipam/lab", "user agent of the clients")
	conflicts.Flags().DurationVar(&co.Duration, "duration", 30*time.Minute, "stop after this long")
	cmd.AddCommand(list, conflicts)
	return cmd
}
