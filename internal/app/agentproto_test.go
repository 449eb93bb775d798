package app

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// TestAgentRequestsParse runs every agent request's command line through the real command tree: each must
// name an existing command, and every flag it writes must exist there with the value it meant.
func TestAgentRequestsParse(t *testing.T) {
	reqs := []struct {
		req   agentproto.Request
		flags map[string]string // flag -> the value the command must see
		args  int
	}{
		{agentproto.Pause{}, nil, 0},
		{agentproto.Serve{Listen: "0.0.0.0:1", TCPListen: "0.0.0.0:2"}, map[string]string{"listen": "0.0.0.0:1", "tcp-listen": "0.0.0.0:2"}, 0},
		{agentproto.ProbeNode{}, nil, 0},
		{agentproto.Burn{Threads: 4, Memory: 256 << 20, Listen: "0.0.0.0:8080"}, map[string]string{"threads": "4", "memory": "268435456", "listen": "0.0.0.0:8080"}, 0},
		{agentproto.DNSWait{Interval: 50 * time.Millisecond, Wait: time.Minute, Timeout: 2 * time.Second, Names: []string{"a.", "b."}},
			map[string]string{"interval": "50ms", "wait": "1m0s", "timeout": "2s"}, 2},
		{agentproto.DNSLookups{Duration: 5 * time.Minute, Interval: 50 * time.Millisecond, Timeout: 12 * time.Second, Concurrency: 512, Each: true,
			Names: []string{"kubernetes.default.svc.cluster.local."}},
			map[string]string{"duration": "5m0s", "interval": "50ms", "timeout": "12s", "concurrency": "512", "each": "true"}, 1},
		{agentproto.JobPeer{Listen: "0.0.0.0:7777", Interval: 200 * time.Millisecond, Wait: 3 * time.Minute, Timeout: 2 * time.Second, Connect: true,
			BackoffBase: time.Second, BackoffFactor: 1.5, BackoffCap: time.Minute, Names: []string{"j-0.j.ns.svc.cluster.local.", "j-1.j.ns.svc.cluster.local."}},
			map[string]string{"listen": "0.0.0.0:7777", "interval": "200ms", "wait": "3m0s", "timeout": "2s", "connect": "true", "backoff-base": "1s",
				"backoff-factor": "1.5", "backoff-cap": "1m0s"}, 2},
		{agentproto.BenchHTTP{URL: "http://198.18.0.1:1/", Concurrency: 3, Duration: 2 * time.Second, NewConn: true},
			map[string]string{"concurrency": "3", "duration": "2s", "new-conn": "true", "output": "json"}, 1},
		{agentproto.BenchTCP{Addr: "198.18.0.1:2", Duration: time.Second}, map[string]string{"duration": "1s", "output": "json"}, 1},
		{agentproto.BenchDNSLoad{Servers: []string{"198.19.0.10", "198.18.1.5"}, Names: []string{"service=kubernetes.default.svc.cluster.local.", "nxdomain=x.ns.svc.cluster.local."},
			Start: 100, Factor: 2, Steps: 6, Step: 3 * time.Second, Timeout: 2 * time.Second, P99Max: 100 * time.Millisecond, FailMax: 0.01},
			map[string]string{"start": "100", "factor": "2", "steps": "6", "step": "3s", "timeout": "2s", "p99-max": "100ms", "fail-max": "0.01", "output": "json",
				"name": "[service=kubernetes.default.svc.cluster.local.,nxdomain=x.ns.svc.cluster.local.]"}, 2},
		{agentproto.NodeHost{HostRoot: "/host", KubeletDir: "/probe", RuntimeDir: "/", ProbeBytes: 1 << 20, Window: 3 * time.Second, ReadyFile: "/ready"},
			map[string]string{"window": "3s", "probe-bytes": "1048576", "path.procfs": "/host/proc", "path.sysfs": "/host/sys", "path.rootfs": "/host",
				"kubelet-dir": "/probe", "runtime-dir": "/", "ready-file": "/ready"}, 0},
	}
	reqs = append(reqs, []struct {
		req   agentproto.Request
		flags map[string]string
		args  int
	}{
		{agentproto.DiskSample{Root: "/host", Dir: "/var/lib/containerd", Interval: 2 * time.Second, Duration: time.Hour, ProbeBytes: 8192},
			map[string]string{"root": "/host", "dir": "/var/lib/containerd", "interval": "2s", "duration": "1h0m0s", "probe-bytes": "8192"}, 0},
		{agentproto.BenchDisk{Path: "/data", Size: 1 << 20, BlockSize: 4096},
			map[string]string{"path": "/data", "size": "1048576", "block-size": "4096", "output": "json"}, 0},
		{agentproto.ControlPlane{Roots: agentproto.CPRoots{Proc: "/host/proc", Cgroup: "/host/sys/fs/cgroup"}, Interval: 2 * time.Second},
			map[string]string{"path.procfs": "/host/proc", "path.cgroupfs": "/host/sys/fs/cgroup", "interval": "2s"}, 0},
		{agentproto.CPScrape{Roots: agentproto.CPRoots{Proc: "/host/proc"}, Component: "etcd", MaxBytes: 1 << 20, Timeout: 5 * time.Second},
			map[string]string{"path.procfs": "/host/proc", "component": "etcd", "max-bytes": "1048576", "timeout": "5s"}, 0},
		{agentproto.CPAudit{Roots: agentproto.CPRoots{Proc: "/host/proc"}, Cursor: agent.AuditCursor{File: "audit.log", Inode: 12, Offset: 34}, MaxBytes: 4096},
			map[string]string{"path.procfs": "/host/proc", "file": "audit.log", "inode": "12", "offset": "34", "max-bytes": "4096"}, 0},
	}...)
	reqs = append(reqs, struct {
		req   agentproto.Request
		flags map[string]string
		args  int
	}{rawRequest(agentproto.NodeHost{ReadyFile: "/ready"}.Ready()), nil, 1})
	for _, r := range reqs {
		argv := agentproto.Argv(r.req)
		if argv[0] != agentproto.Binary {
			t.Fatalf("%T: argv %v does not start with the binary", r.req, argv)
		}
		root := NewRoot(common.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
		cmd, rest, err := root.Find(argv[1:])
		if err != nil || cmd == root {
			t.Fatalf("%T: %v names no command: %v", r.req, argv, err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("%T: %v: %v", r.req, argv, err)
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil || len(cmd.Flags().Args()) != r.args {
			t.Errorf("%T: positional args %v (want %d): %v", r.req, cmd.Flags().Args(), r.args, err)
		}
		for name, want := range r.flags {
			f := cmd.Flags().Lookup(name)
			if f == nil {
				t.Errorf("%T: %s has no --%s", r.req, cmd.CommandPath(), name)
				continue
			}
			if got := f.Value.String(); got != want || !f.Changed {
				t.Errorf("%T: --%s = %q (set %v), want %q", r.req, name, got, f.Changed, want)
			}
		}
	}
}

// rawRequest is an argv as a Request (Args drops the binary): the probe's command line checked above.
type rawRequest []string

func (r rawRequest) Args() []string { return r[1:] }
