package agent

import (
	"path"
	"strings"

	"sigs.k8s.io/yaml"
)

// Parsers of what the control-plane tier reads that is no kernel file: a component's command line as flags,
// its static-pod manifest and the names lumberjack gives the apiserver's rotated audit files (a cgroup's
// cpu.stat, CPU quota and cpu.pressure go through internal/source/hostfs). Split from the I/O so tests and fuzzing
// feed them bytes.

// Control-plane component names, as the process's argv[0] base name has them.
const (
	CompAPIServer  = "kube-apiserver"
	CompEtcd       = "etcd"
	CompScheduler  = "kube-scheduler"
	CompController = "kube-controller-manager"
	// CompK3s and CompRKE2 are the single `k3s server` / `rke2 server` process (k3s embeds all four
	// components in it; rke2's server supervises them as static pods, which are found as their own processes).
	CompK3s  = "k3s-server"
	CompRKE2 = "rke2-server"
)

// ComponentOf names the control-plane component an argv is, or "" when it is none: argv[0]'s base name, or
// `k3s server` / `rke2 server`.
func ComponentOf(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	switch b := path.Base(argv[0]); b {
	case CompAPIServer, CompEtcd, CompScheduler, CompController:
		return b
	case "k3s", "rke2":
		if len(argv) > 1 && argv[1] == "server" {
			return b + "-server"
		}
	}
	return ""
}

// valueFlags are the flags whose value may follow as the next argument ("--audit-log-path /x"); other flags
// are read only in their "--name=value" form, since a bare "--name" may be a boolean.
var valueFlags = map[string]bool{
	"audit-log-path": true, "audit-policy-file": true, "listen-metrics-urls": true, "listen-client-urls": true,
	"etcd-servers": true, "bind-address": true, "secure-port": true, "kube-apiserver-arg": true,
	"kube-controller-manager-arg": true, "kube-scheduler-arg": true, "etcd-arg": true, "advertise-client-urls": true,
	"pod-manifest-path": true, "config": true,
}

// ParseFlags reads a component's command line (argv[0] excluded) as flags: "--name=value", "--name value"
// for the flags that take one, and a bare "--name" as "true". A flag given twice keeps every value, joined
// by "\x00" only for the k3s pass-through flags (--kube-apiserver-arg...), which repeat; for the others the
// last wins, as pflag does.
func ParseFlags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name := strings.TrimLeft(a, "-")
		val, hasVal := "", false
		if n, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = n, v, true
		}
		if name == "" {
			continue
		}
		if !hasVal {
			if valueFlags[name] && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				val = args[i+1]
				i++
			} else {
				val = "true"
			}
		}
		if strings.HasSuffix(name, "-arg") {
			if prev, ok := out[name]; ok {
				val = prev + "\x00" + val
			}
		}
		out[name] = val
	}
	return out
}

// K3sComponentFlags reads the flags k3s or rke2 passes through to one embedded component: each
// --kube-apiserver-arg (--kube-controller-manager-arg, --kube-scheduler-arg, --etcd-arg) value "name=value".
func K3sComponentFlags(serverFlags map[string]string, comp string) map[string]string {
	key := map[string]string{CompAPIServer: "kube-apiserver-arg", CompController: "kube-controller-manager-arg",
		CompScheduler: "kube-scheduler-arg", CompEtcd: "etcd-arg"}[comp]
	out := map[string]string{}
	v, ok := serverFlags[key]
	if !ok || key == "" {
		return out
	}
	for _, kv := range strings.Split(v, "\x00") {
		n, val, ok := strings.Cut(strings.TrimLeft(kv, "-"), "=")
		if !ok || n == "" {
			continue
		}
		out[n] = val
	}
	return out
}

// lumberjackTime is the timestamp lumberjack (the apiserver's audit log rotation) puts in a backup's name:
// <name>-<timestamp><ext>, e.g. audit-2024-05-01T10-00-00.000.log for audit.log.
const lumberjackTime = "2006-01-02T15-04-05.000"

// RotatedOf reports whether file is a lumberjack backup of active (both base names), with its timestamp
// (which sorts as the rotations happened); a ".gz" backup (--audit-log-compress) is recognised too.
func RotatedOf(active, file string) (stamp string, gz, ok bool) {
	ext := path.Ext(active)
	prefix := strings.TrimSuffix(active, ext) + "-"
	name := file
	if strings.HasSuffix(name, ".gz") {
		name, gz = strings.TrimSuffix(name, ".gz"), true
	}
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ext) || len(name) != len(prefix)+len(lumberjackTime)+len(ext) {
		return "", false, false
	}
	stamp = name[len(prefix) : len(name)-len(ext)]
	for i := 0; i < len(stamp); i++ {
		c, l := stamp[i], lumberjackTime[i]
		if (l >= '0' && l <= '9') != (c >= '0' && c <= '9') || (!(l >= '0' && l <= '9') && c != l) {
			return "", false, false
		}
	}
	return stamp, gz, true
}

// ManifestCommands reads a static-pod manifest (YAML or JSON) and returns each container's command line:
// its command followed by its args. A manifest that is no pod gives none.
func ManifestCommands(b []byte) [][]string {
	var pod struct {
		Spec struct {
			Containers []struct {
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return nil
	}
	var out [][]string
	for _, c := range pod.Spec.Containers {
		if argv := append(append([]string{}, c.Command...), c.Args...); len(argv) > 0 {
			out = append(out, argv)
		}
	}
	return out
}

// KubeletStaticPodPath reads staticPodPath from a kubelet configuration file (YAML or JSON); "" when unset.
func KubeletStaticPodPath(b []byte) string {
	var c struct {
		StaticPodPath string `json:"staticPodPath"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return ""
	}
	return c.StaticPodPath
}
