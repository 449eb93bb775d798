package pki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestEnsureIssuesVerifiableCerts: the CA signs a serving and a client certificate that verify against it,
// a later certificate too, and Ensure on a complete PKI changes nothing.
func TestEnsureIssuesVerifiableCerts(t *testing.T) {
	dir := t.TempDir()
	certs := []Cert{{Name: "srv", CN: "server", Server: true, DNS: []string{"localhost"}, IPs: []string{"198.19.255.1"}},
		{Name: "cli", CN: "client", Org: "system:masters"}}
	if err := Ensure(dir, certs); err != nil {
		t.Fatal(err)
	}
	if err := EnsureCert(dir, Cert{Name: "late", CN: "system:node:n1", Org: "system:nodes"}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) *x509.Certificate {
		b, err := os.ReadFile(filepath.Join(dir, name+".crt"))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(p.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	roots := x509.NewCertPool()
	roots.AddCert(read("ca"))
	if _, err := read("srv").Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	for _, n := range []string{"cli", "late"} {
		if _, err := read(n).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("client certificate %s: %v", n, err)
		}
	}
	if got := read("late").Subject.Organization; len(got) != 1 || got[0] != "system:nodes" {
		t.Errorf("organization %v", got)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err := Ensure(dir, certs); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(after) != string(before) {
		t.Error("a second Ensure replaced the CA")
	}
	kc := filepath.Join(dir, "cli.kubeconfig")
	if err := WriteKubeconfig(dir, kc, "https://198.19.255.1:6443", "cli"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil || cfg.Host != "https://198.19.255.1:6443" || len(cfg.CertData) == 0 || len(cfg.CAData) == 0 {
		t.Fatalf("kubeconfig: %+v %v", cfg, err)
	}
	tk := filepath.Join(dir, "sa.kubeconfig")
	if err := WriteTokenKubeconfig(dir, tk, "https://198.19.255.1:6443", "sa", "t0ken"); err != nil {
		t.Fatal(err)
	}
	tcfg, err := clientcmd.BuildConfigFromFlags("", tk)
	if err != nil || tcfg.BearerToken != "t0ken" || len(tcfg.CertData) != 0 || string(tcfg.CAData) != string(before) {
		t.Fatalf("token kubeconfig: %+v %v", tcfg, err)
	}
}
