package common

import (
	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/measure"
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
	fl.Float32Var(&f.QPS, "qps", 20, "kubeslow's own request rate limit towards the apiserver (client-side)")
	fl.IntVar(&f.Burst, "burst", 40, "kubeslow's own request burst towards the apiserver (client-side)")
}

// AgentImage is the image holding the kubeslow binary for in-cluster agents: image when given, else on the
// lab the lab's own, else "" (none known).
func (f *ClusterFlags) AgentImage(image string) string {
	if image == "" && f.Lab {
		return lab.AgentImage
	}
	return image
}

// Connect returns the selected cluster, and lab information when it is the lab.
func (f *ClusterFlags) Connect() (*kube.Cluster, *measure.LabInfo, error) {
	o := kube.ClientOptions{Kubeconfig: f.Kubeconfig, Context: f.Context, QPS: f.QPS, Burst: f.Burst}
	var info *measure.LabInfo
	if f.Lab {
		d, err := lab.DefaultDirs()
		if err != nil {
			return nil, nil, err
		}
		o.Kubeconfig, o.Context = d.AdminKubeconfig(), ""
		info = &measure.LabInfo{EtcdEndpoint: lab.EtcdEndpoint(), AuditLogPath: d.AuditLog(), StateDir: d.State}
	}
	c, err := kube.Connect(o)
	if err != nil {
		if f.Lab {
			return nil, nil, &ExitError{Code: 2, Err: err}
		}
		return nil, nil, err
	}
	if f.Lab {
		c.Context = "lab"
	}
	return c, info, nil
}
