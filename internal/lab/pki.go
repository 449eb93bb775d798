package lab

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// certSpec describes one certificate the lab issues from its own CA.
type certSpec struct {
	name   string // file base name
	cn     string
	org    string
	server bool // serving certificate (adds serverAuth and SANs)
	dns    []string
	ips    []string
}

// labCerts are the lab's certificates. Client identities follow what the components' default RBAC expects.
func labCerts() []certSpec {
	return []certSpec{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips: []string{"127.0.0.1", ControlPlaneIP, UplinkIP, KubernetesSvcIP}},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", org: "system:masters"},
		{name: "admin", cn: "kubeslow-admin", org: "system:masters"},
		{name: "controller-manager", cn: "system:kube-controller-manager"},
		{name: "scheduler", cn: "system:kube-scheduler"},
		// kwok writes node and pod status for every simulated node, which the Node authorizer would refuse.
		{name: "kwok", cn: "kwok-controller", org: "system:masters"},
	}
}

// component kubeconfigs: name -> certificate.
var labKubeconfigs = map[string]string{
	"controller-manager": "controller-manager",
	"scheduler":          "scheduler",
	"kwok":               "kwok",
}

// ensurePKI creates the CA, certificates, service-account key and kubeconfigs unless they exist.
func ensurePKI(d Dirs) error {
	dir := d.PKIDir()
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubeslow-lab-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	for i, spec := range labCerts() {
		if err := issue(dir, spec, int64(i+2), caCert, caKey, now); err != nil {
			return fmt.Errorf("certificate %s: %w", spec.name, err)
		}
	}
	// The service-account token signing key.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "ca.key"), caKey); err != nil {
		return err
	}
	// ca.crt last: its presence marks a complete PKI.
	return writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)
}

func issue(dir string, s certSpec, serial int64, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: s.cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if s.org != "" {
		tmpl.Subject.Organization = []string{s.org}
	}
	if s.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames = s.dns
		for _, ip := range s.ips {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, s.name+".key"), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, s.name+".crt"), "CERTIFICATE", der)
}

func writeKey(path string, key any) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// APIServerURL is where the apiserver answers, from the host and from inside the lab.
func APIServerURL() string { return fmt.Sprintf("https://%s:%d", ControlPlaneIP, APIServerPort) }

// writeKubeconfig writes a kubeconfig for the given certificate with embedded credentials.
func writeKubeconfig(d Dirs, path, cert string) error {
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(d.PKIDir(), name)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(cert + ".crt")
	if err != nil {
		return err
	}
	key, err := read(cert + ".key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubeslow-lab"] = &clientcmdapi.Cluster{Server: APIServerURL(), CertificateAuthorityData: ca}
	cfg.AuthInfos[cert] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["kubeslow-lab"] = &clientcmdapi.Context{Cluster: "kubeslow-lab", AuthInfo: cert}
	cfg.CurrentContext = "kubeslow-lab"
	return clientcmd.WriteToFile(*cfg, path)
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

// ensureCert issues spec from the lab's CA unless its certificate exists. Real nodes, kube-proxy and CoreDNS
// get their certificates this way, when they are first started.
func ensureCert(d Dirs, spec certSpec) error {
	dir := d.PKIDir()
	if _, err := os.Stat(filepath.Join(dir, spec.name+".crt")); err == nil {
		return nil
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return fmt.Errorf("lab CA in %s is damaged", dir)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return err
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return fmt.Errorf("lab CA key is not a signer")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	return issue(dir, spec, serial.Int64()+1000, ca, signer, time.Now())
}
