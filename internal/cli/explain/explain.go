// Package explain is `kubeslow explain KIND [NAMESPACE/]NAME`: why a pod, a rollout or a Job that already ran
// took the time it took to start, read from the cluster's objects with the view role, creating nothing.
package explain

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	analysis "github.com/kubeslow/kubeslow/internal/explain"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/version"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// exitUsage is the exit code of a command line that cannot run (usage, not found, unreadable): run's
// "could not run".
const exitUsage = 2

// Conn is a connected cluster as explain uses it: the client, the kubeconfig context's namespace (for a NAME
// without NAMESPACE/) and the context's name.
type Conn struct {
	Client    kubernetes.Interface
	Namespace string
	Context   string
}

// Connector connects to the cluster the flags select (replaced in tests by a fake clientset).
type Connector func(f *common.ClusterFlags) (Conn, error)

// NewCommand returns `kubeslow explain`.
func NewCommand(streams common.IOStreams) *cobra.Command {
	return New(streams, Connect, time.Now)
}

// Connect connects with the kubeconfig (or the lab's) and reads the context's default namespace.
func Connect(f *common.ClusterFlags) (Conn, error) {
	t, err := f.Target()
	if err != nil {
		return Conn{}, err
	}
	cl, err := kube.Connect(t.Client)
	if err != nil {
		return Conn{}, err
	}
	return Conn{Client: cl.Client, Namespace: kubeconfigNamespace(t.Client), Context: cl.Context}, nil
}

// kubeconfigNamespace is the namespace of the selected context ("default" when it names none).
func kubeconfigNamespace(o kube.ClientOptions) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// New is NewCommand with its connection and clock given.
func New(streams common.IOStreams, connect Connector, now func() time.Time) *cobra.Command {
	var cf common.ClusterFlags
	out := common.OutputFlag{Formats: []string{"text", "json", "html"}}
	var allPods bool
	var ttl time.Duration
	usage := func(err error) error { return &common.ExitError{Code: exitUsage, Err: err} }
	cmd := &cobra.Command{
		Use:   "explain pod|deployment|statefulset|daemonset|job [NAMESPACE/]NAME",
		Short: "Why did this pod, rollout or Job take so long to start: its timeline step by step and the cause, creating nothing",
		Long: `explain reads a workload that already ran — a pod, the pods of a Deployment's newest ReplicaSet, of a
StatefulSet's or DaemonSet's latest revision (--all-pods: every pod), or a Job's — and splits each pod's
start-up into steps: scheduling, sandbox and network, each image pull, each init container, containers
started, readiness, in the Services' EndpointSlices. Each step has its start, its seconds, the source of its
timestamps and their precision. The verdicts name the cause of the longest steps with the numbers they rest
on, the threshold and its source, and the fix: serialized pulls, a slow registry, a slow node, scheduling
failures, a ResourceQuota, CNI/IPAM errors, a long init container, OOM kills, crash loops, a readiness probe.

It needs the view role only (get/list of pods, events, the workload and its ReplicaSets, services and
endpointslices) and creates nothing. Events expire after the apiserver's --event-ttl (1 h by default): on an
older pod the steps come from its conditions alone, and explain says so. See docs/explain.md.

Exit codes: 0 explained; 2 could not (a usage error, an object not found, pods not readable).`,
		Example: `  kubeslow explain pod shop/web-5d8f9-x2x7q
  kubeslow explain deployment shop/web -o json
  kubeslow explain job train            # in the kubeconfig context's namespace`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usage(fmt.Errorf("want KIND [NAMESPACE/]NAME (KIND: %s), got %d argument(s)", strings.Join(analysis.Kinds, ", "), len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return usage(err)
			}
			kind, err := analysis.ParseKind(args[0])
			if err != nil {
				return usage(err)
			}
			conn, err := connect(&cf)
			if err != nil {
				return usage(err)
			}
			ns, name, err := analysis.ParseRef(args[1], conn.Namespace)
			if err != nil {
				return usage(err)
			}
			in, err := analysis.Read(common.Context(cmd), conn.Client, analysis.Ref{Kind: kind, Namespace: ns, Name: name, AllPods: allPods}, now())
			if err != nil {
				return usage(err)
			}
			v, commit := version.Get()
			in.Tool, in.Context, in.EventTTL = result.Tool{Name: "kubeslow", Version: v, Commit: commit}, conn.Context, ttl
			x := analysis.Explain(*in)
			for _, o := range x.OutOfReach {
				if o.Source == "events" || o.Source == "endpointslices" {
					streams.Progressf("kubeslow explain: %s %s", o.Signal, o.Why)
				}
			}
			if err := write(streams, out.Format, x); err != nil {
				return usage(err)
			}
			return nil
		},
	}
	cf.Add(cmd)
	out.Add(cmd)
	cmd.Flags().BoolVar(&allPods, "all-pods", false, "every pod of a Deployment, StatefulSet or DaemonSet, not only its latest rollout's")
	cmd.Flags().DurationVar(&ttl, "event-ttl", analysis.DefaultEventTTL, "the apiserver's --event-ttl: how long it keeps Events (to say what expired)")
	return cmd
}

func write(s common.IOStreams, format string, x *result.Explanation) error {
	switch format {
	case "json":
		return result.EncodeExplanation(s.Out, x)
	case "html":
		return analysis.WriteHTML(s.Out, x)
	case "text":
		return analysis.WriteText(s.Out, x)
	}
	return errors.New("unknown format " + format)
}
