package agent

import (
	"reflect"
	"strings"
	"testing"
)

func TestComponentOf(t *testing.T) {
	for argv, want := range map[string]string{
		"kube-apiserver --advertise-address=1.2.3.4":   CompAPIServer,
		"/usr/local/bin/etcd --data-dir=/var/lib/etcd": CompEtcd,
		"kube-scheduler": CompScheduler,
		"/root/.cache/kube-controller-manager --v=2":    CompController,
		"/usr/local/bin/k3s server --disable=traefik":   CompK3s,
		"/usr/local/bin/k3s agent":                      "",
		"rke2 server":                                   CompRKE2,
		"etcdctl get":                                   "",
		"/bin/sh -c kube-apiserver":                     "",
		"kubelet --config=/var/lib/kubelet/config.yaml": "",
	} {
		if got := ComponentOf(strings.Fields(argv)); got != want {
			t.Errorf("%q: %q, want %q", argv, got, want)
		}
	}
	if ComponentOf(nil) != "" {
		t.Error("empty argv")
	}
}

func TestParseFlags(t *testing.T) {
	got := ParseFlags([]string{"--audit-log-path", "/var/log/audit.log", "--secure-port=6443", "--allow-privileged", "--bind-address", "-x",
		"--kube-apiserver-arg=audit-log-path=/a", "--kube-apiserver-arg", "audit-policy-file=/p", "positional", "--=x", "--"})
	want := map[string]string{"audit-log-path": "/var/log/audit.log", "secure-port": "6443", "allow-privileged": "true", "bind-address": "true",
		"x": "true", "kube-apiserver-arg": "audit-log-path=/a\x00audit-policy-file=/p"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	k := K3sComponentFlags(got, CompAPIServer)
	if k["audit-log-path"] != "/a" || k["audit-policy-file"] != "/p" || len(k) != 2 {
		t.Errorf("k3s apiserver flags %q", k)
	}
	if len(K3sComponentFlags(got, CompEtcd)) != 0 {
		t.Error("etcd has no pass-through flags here")
	}
}

func TestReadFlagsKeepsOnlyKnown(t *testing.T) {
	f := ReadFlags(CompK3s, []string{"server", "--datastore-endpoint=mysql://u:secret@h/db", "--kube-apiserver-arg=audit-log-path=/x", "--etcd-expose-metrics"})
	if _, ok := f["datastore-endpoint"]; ok {
		t.Errorf("a flag that may hold a password was kept: %q", f)
	}
	c := Component{Name: CompK3s, Flags: f}
	if v, ok := c.FlagOf(CompAPIServer, "audit-log-path"); !ok || v != "/x" {
		t.Errorf("k3s apiserver audit path %q %v (flags %q)", v, ok, f)
	}
	if !c.Embeds(CompEtcd) || !(&Component{Name: CompEtcd}).Embeds(CompEtcd) || (&Component{Name: CompEtcd}).Embeds(CompAPIServer) {
		t.Error("Embeds")
	}
}

func TestRotatedOf(t *testing.T) {
	for _, c := range []struct {
		active, file, stamp string
		gz, ok              bool
	}{
		{"audit.log", "audit-2024-05-01T10-00-00.000.log", "2024-05-01T10-00-00.000", false, true},
		{"audit.log", "audit-2024-05-01T10-00-00.000.log.gz", "2024-05-01T10-00-00.000", true, true},
		{"audit", "audit-2024-05-01T10-00-00.000", "2024-05-01T10-00-00.000", false, true},
		{"audit.log", "audit.log", "", false, false},
		{"audit.log", "audit-2024-05-01T10-00-00.log", "", false, false},
		{"audit.log", "audit-2024-05-01X10-00-00.000.log", "", false, false},
		{"audit.log", "other-2024-05-01T10-00-00.000.log", "", false, false},
		{"audit.log", "audit-2024-05-01T10-00-00.000.json", "", false, false},
	} {
		stamp, gz, ok := RotatedOf(c.active, c.file)
		if stamp != c.stamp || gz != c.gz || ok != c.ok {
			t.Errorf("%s / %s: %q %v %v", c.active, c.file, stamp, gz, ok)
		}
	}
}

func TestManifestCommands(t *testing.T) {
	m := []byte(`apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  containers:
  - name: etcd
    command: [etcd, --listen-metrics-urls=http://127.0.0.1:2381]
    args: [--data-dir=/var/lib/etcd]
  - name: sidecar
    image: x
`)
	got := ManifestCommands(m)
	if len(got) != 1 || !reflect.DeepEqual(got[0], []string{"etcd", "--listen-metrics-urls=http://127.0.0.1:2381", "--data-dir=/var/lib/etcd"}) {
		t.Errorf("%q", got)
	}
	if ManifestCommands([]byte("::: not yaml")) != nil {
		t.Error("garbage gave commands")
	}
	if KubeletStaticPodPath([]byte("kind: KubeletConfiguration\nstaticPodPath: /etc/kubernetes/manifests\n")) != "/etc/kubernetes/manifests" {
		t.Error("staticPodPath")
	}
}
