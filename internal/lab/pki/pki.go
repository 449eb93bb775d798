// Package pki is the lab's certificate authority: an ECDSA CA made in Go (crypto/x509), the certificates it
// issues (client identities and serving certificates), the service-account signing key, and kubeconfigs with
// embedded credentials. Everything lives in one directory; a complete PKI is marked by its ca.crt.
package pki

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

// Cert describes one certificate issued from the CA.
type Cert struct {
	Name   string // file base name
	CN     string
	Org    string
	Server bool // serving certificate (adds serverAuth and SANs)
	DNS    []string
	IPs    []string
}

// Ensure creates the CA in dir, the certificates certs and the service-account key, unless they exist.
func Ensure(dir string, certs []Cert) error {
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
	for i, spec := range certs {
		if err := issue(dir, spec, int64(i+2), caCert, caKey, now); err != nil {
			return fmt.Errorf("certificate %s: %w", spec.Name, err)
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

func issue(dir string, s Cert, serial int64, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: s.CN},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if s.Org != "" {
		tmpl.Subject.Organization = []string{s.Org}
	}
	if s.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames = s.DNS
		for _, ip := range s.IPs {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, s.Name+".key"), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, s.Name+".crt"), "CERTIFICATE", der)
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

// WriteKubeconfig writes a kubeconfig at path for the apiserver at server, with certificate cert of dir
// (and the CA) embedded.
func WriteKubeconfig(dir, path, server, cert string) error {
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }
	crt, err := read(cert + ".crt")
	if err != nil {
		return err
	}
	key, err := read(cert + ".key")
	if err != nil {
		return err
	}
	return writeKubeconfig(dir, path, server, cert, &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key})
}

// WriteTokenKubeconfig writes a kubeconfig for server, trusting the CA in dir, whose user is name with a bearer
// token (a ServiceAccount's).
func WriteTokenKubeconfig(dir, path, server, name, token string) error {
	return writeKubeconfig(dir, path, server, name, &clientcmdapi.AuthInfo{Token: token})
}

// writeKubeconfig writes a kubeconfig with one context: server, trusting the CA in dir, as user with auth.
func writeKubeconfig(dir, path, server, user string, auth *clientcmdapi.AuthInfo) error {
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubeslow-lab"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = auth
	cfg.Contexts["kubeslow-lab"] = &clientcmdapi.Context{Cluster: "kubeslow-lab", AuthInfo: user}
	cfg.CurrentContext = "kubeslow-lab"
	return clientcmd.WriteToFile(*cfg, path)
}

// EnsureCert issues spec from the CA in dir unless its certificate exists.
func EnsureCert(dir string, spec Cert) error {
	if _, err := os.Stat(filepath.Join(dir, spec.Name+".crt")); err == nil {
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
		return fmt.Errorf("CA in %s is damaged", dir)
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
		return fmt.Errorf("CA key is not a signer")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	return issue(dir, spec, serial.Int64()+1000, ca, signer, time.Now())
}
