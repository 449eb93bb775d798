package lab

import (
	"fmt"
	"path/filepath"

	"github.com/kubeslow/kubeslow/internal/lab/pki"
)

// certSpec is one certificate the lab issues from its CA (internal/lab/pki).
type certSpec = pki.Cert

// labCerts are the lab's certificates. Client identities follow what the components' default RBAC expects.
func labCerts() []certSpec {
	return []certSpec{
		{Name: "apiserver", CN: "kube-apiserver", Server: true,
			DNS: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPs: []string{"127.0.0.1", ControlPlaneIP, UplinkIP, KubernetesSvcIP}},
		{Name: "apiserver-kubelet-client", CN: "kube-apiserver-kubelet-client", Org: "system:masters"},
		{Name: "admin", CN: "kubeslow-admin", Org: "system:masters"},
		{Name: "controller-manager", CN: "system:kube-controller-manager"},
		{Name: "scheduler", CN: "system:kube-scheduler"},
		// kwok writes node and pod status for every simulated node, which the Node authorizer would refuse.
		{Name: "kwok", CN: "kwok-controller", Org: "system:masters"},
	}
}

// component kubeconfigs: name -> certificate.
var labKubeconfigs = map[string]string{
	"controller-manager": "controller-manager",
	"scheduler":          "scheduler",
	"kwok":               "kwok",
}

// ensurePKI creates the lab's CA, certificates and service-account key unless they exist.
func ensurePKI(d Dirs) error { return pki.Ensure(d.PKIDir(), labCerts()) }

// ensureCert issues spec from the lab's CA unless its certificate exists. Real nodes, kube-proxy and CoreDNS
// get their certificates this way, when they are first started.
func ensureCert(d Dirs, spec certSpec) error { return pki.EnsureCert(d.PKIDir(), spec) }

// APIServerURL is where the apiserver answers, from the host and from inside the lab.
func APIServerURL() string { return fmt.Sprintf("https://%s:%d", ControlPlaneIP, APIServerPort) }

// writeKubeconfig writes a kubeconfig for the lab's apiserver with the given certificate embedded.
func writeKubeconfig(d Dirs, path, cert string) error {
	return pki.WriteKubeconfig(d.PKIDir(), path, APIServerURL(), cert)
}

func (d Dirs) componentKubeconfig(name string) string {
	return filepath.Join(d.PKIDir(), name+".kubeconfig")
}

func ensureKubeconfigs(d Dirs) error {
	if err := writeKubeconfig(d, d.AdminKubeconfig(), "admin"); err != nil {
		return err
	}
	for name, cert := range labKubeconfigs {
		if err := writeKubeconfig(d, d.componentKubeconfig(name), cert); err != nil {
			return err
		}
	}
	return nil
}
