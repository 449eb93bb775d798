// Package image is `kubeslow image`: the agent image, which the node agent and the DNS probes run from on a
// real cluster.
package image

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
)

// NewCommand returns the image command and its subcommands.
func NewCommand(streams common.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and push kubeslow's agent image (the node agent and DNS probes run from it)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPush(streams))
	return cmd
}

func newPush(streams common.IOStreams) *cobra.Command {
	var o agentimage.PushOptions
	def := agentimage.Default()
	if def == "" {
		def = "none for this development build"
	}
	cmd := &cobra.Command{
		Use:   "push REF",
		Short: "Push an image of kubeslow's own binary to a registry and print its digest reference",
		Long: `Build a one-layer image holding kubeslow's static binary at /kubeslow (its entrypoint) and push it to
REF, e.g. registry.example.com/tools/kubeslow:v1. No container daemon is needed. Credentials come from the
Docker config file (~/.docker/config.json, $DOCKER_CONFIG) and its credential helpers, as ` + "`docker login`" + `
leaves them. The reference by digest (REF@sha256:...) is printed on stdout: pass it to --agent-image.

This release's default agent image: ` + def + `.`,
		Example: `  kubeslow image push registry.example.com/tools/kubeslow:dev
  kubeslow run --kubeconfig ~/.kube/config --agent-image registry.example.com/tools/kubeslow:dev`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Binary == "" {
				self, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding kubeslow's own binary (pass --binary): %w", err)
				}
				o.Binary = self
			}
			streams.Progressf("pushing %s (binary %s, %s)", args[0], o.Binary, o.Platform)
			ref, err := agentimage.Push(common.Context(cmd), args[0], o)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(streams.Out, ref.String())
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Binary, "binary", "", "static kubeslow binary to pack (default: this one)")
	fl.StringVar(&o.Platform, "platform", "linux/amd64", "the image's platform, linux/amd64 or linux/arm64 (the binary must be built for it)")
	fl.BoolVar(&o.Insecure, "insecure", false, "allow a plain-HTTP registry (HTTPS is still tried first, its certificate verified)")
	return cmd
}
