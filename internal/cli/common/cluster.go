package common

import (
	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/source/agent/image"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// ClusterFlags select the cluster: a kubeconfig/context, or the local lab.
type ClusterFlags struct {
	Kubeconfig string
	Context    string
	Lab        bool
	QPS        float32
	Burst      int
}

// Add registers the flags on cmd.
func (f *ClusterFlags) Add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.Context, "context", "", "kubeconfig context (default: the current one)")
	fl.BoolVar(&f.Lab, "lab", false, "use the local lab started by `kubeslow lab up`")
	fl.Float32Var(&f.QPS, "qps", runner.DefaultQPS, "kubeslow's own request rate limit towards the apiserver (client-side)")
	fl.IntVar(&f.Burst, "burst", runner.DefaultBurst, "kubeslow's own request burst towards the apiserver (client-side); a benchmark's own creation rate is added on top")
}

// AgentImage is the image holding the kubeslow binary for in-cluster agents: image when given, else on the
// lab the lab's own, else the release's (agentimage.Default; "" for a development build: none known).
func (f *ClusterFlags) AgentImage(image string) string {
	switch {
	case image != "":
		return image
	case f.Lab:
		return lab.AgentImage
	}
	return agentimage.Default()
}

// Target is the selected cluster as the run lifecycle takes it (no connection yet).
func (f *ClusterFlags) Target() (runner.Target, error) {
	t := runner.Target{Client: kube.ClientOptions{Kubeconfig: f.Kubeconfig, Context: f.Context, QPS: f.QPS, Burst: f.Burst}}
	if f.Lab {
		d, err := lab.DefaultDirs()
		if err != nil {
			return t, err
		}
		t.Client.Kubeconfig, t.Client.Context = d.AdminKubeconfig(), ""
		t.Lab = true
	}
	return t, nil
}

// Connect returns the selected cluster (for commands that are not a run: cleanup).
func (f *ClusterFlags) Connect() (*kube.Cluster, error) {
	t, err := f.Target()
	if err != nil {
		return nil, err
	}
	return kube.Connect(t.Client)
}
