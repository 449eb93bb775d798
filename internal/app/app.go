// Package app builds the root command and is the only place that exits the process.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	agentcmd "github.com/kubeslow/kubeslow/internal/cli/agent"
	"github.com/kubeslow/kubeslow/internal/cli/audit"
	"github.com/kubeslow/kubeslow/internal/cli/bench"
	"github.com/kubeslow/kubeslow/internal/cli/cleanup"
	"github.com/kubeslow/kubeslow/internal/cli/common"
	explaincmd "github.com/kubeslow/kubeslow/internal/cli/explain"
	imagecmd "github.com/kubeslow/kubeslow/internal/cli/image"
	"github.com/kubeslow/kubeslow/internal/cli/lab"
	nodescmd "github.com/kubeslow/kubeslow/internal/cli/nodes"
	"github.com/kubeslow/kubeslow/internal/cli/pause"
	"github.com/kubeslow/kubeslow/internal/cli/probe"
	"github.com/kubeslow/kubeslow/internal/cli/rbac"
	"github.com/kubeslow/kubeslow/internal/cli/reportcmd"
	rulescmd "github.com/kubeslow/kubeslow/internal/cli/rules"
	"github.com/kubeslow/kubeslow/internal/cli/run"
	versioncmd "github.com/kubeslow/kubeslow/internal/cli/version"
	watchcmd "github.com/kubeslow/kubeslow/internal/cli/watch"
)

// Main runs kubeslow with the process's arguments and exits with its code.
func Main() {
	streams := common.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, stop := signalContext(streams.ErrOut)
	code := Run(ctx, streams, os.Args[1:])
	stop()
	os.Exit(code)
}

// Run executes one command line and returns the exit code: 0 ok, 1 findings (for commands that report them),
// 2 could not run.
func Run(ctx context.Context, streams common.IOStreams, args []string) int {
	root := NewRoot(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *common.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(streams.ErrOut, "kubeslow:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(streams.ErrOut, "kubeslow:", err)
	return 2
}

// NewRoot builds the command tree. Subcommands are listed here explicitly (no init() registration).
func NewRoot(streams common.IOStreams) *cobra.Command {
	name := "kubeslow"
	// Invoked as a kubectl plugin (kubectl-slow), kubectl shows it as "kubectl slow".
	if base := filepath.Base(os.Args[0]); strings.HasPrefix(base, "kubectl-") {
		name = "kubectl " + strings.TrimPrefix(base, "kubectl-")
	}
	root := &cobra.Command{
		Use:   name,
		Short: "Measure a Kubernetes cluster and name why it is slow",
		Long: `kubeslow measures a cluster the way experienced engineers do by hand (pod start-up by phase,
API and etcd latency, who loads the apiserver, pod network versus host, DNS readiness, disk sync
latency, node settings) and names the cause, with the evidence and the fix.

With no cluster at hand, "kubeslow lab up" starts a real local Kubernetes to try it on.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(
		versioncmd.NewCommand(streams),
		lab.NewCommand(streams),
		run.NewCommand(streams),
		cleanup.NewCommand(streams),
		rbac.NewCommand(streams),
		pause.NewCommand(streams),
		probe.NewCommand(streams),
		audit.NewCommand(streams),
		bench.NewCommand(streams),
		reportcmd.NewReport(streams),
		reportcmd.NewDiff(streams),
		agentcmd.NewCommand(streams),
		nodescmd.NewCommand(streams),
		imagecmd.NewCommand(streams),
		explaincmd.NewCommand(streams),
		watchcmd.NewCommand(streams),
		rulescmd.NewCommand(streams),
	)
	return root
}

// signalContext cancels the context on the first SIGINT/SIGTERM so that cleanup runs, and exits at once on
// the second.
func signalContext(errOut io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(errOut, "kubeslow: interrupted: cleaning up (press Ctrl-C again to exit now)")
		cancel()
		<-ch
		fmt.Fprintln(errOut, "kubeslow: interrupted twice: exiting without cleanup; run `kubeslow cleanup` later")
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}
