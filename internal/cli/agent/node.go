package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/version"
)

// newNode is `kubeslow agent node`: the node agent (the DaemonSet's container, or run by hand on a node).
func newNode(streams common.IOStreams) *cobra.Command {
	o := agent.NodeHostOptions{Dirs: map[string]string{}}
	var kubeletDir, runtimeDir, readyFile string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Print (one JSON line) this node's kernel-level facts: neighbour table vs gc_thresh, conntrack, kernel log lines that matter, D-state processes, PSI, the disks under the kubelet's and the runtime's directories with a short sync-write probe, every client's DNS queries and TCP connects (eBPF), CPUs, load, memory",
		Long: `node reads the host through configurable roots (node_exporter's --path.procfs/--path.sysfs/--path.rootfs;
the DaemonSet mounts the host's /proc, /sys and /dev/kmsg read-only under /host) and the node's network
namespace through --path.netprocfs (its own /proc in a host-network pod). It writes a few MiB at most: a
sequential 2,300-byte write+fdatasync probe of --probe-bytes in --kubelet-dir and --runtime-dir. With --dns
(the default) it times every UDP DNS query and TCP connect of the node over its read with eBPF (docs/ebpf.md). What cannot
be read is listed under "unread" with the reason. With --ready-file it then writes that file and waits to be
stopped (the DaemonSet's readiness probe looks for it, so kubeslow knows every report is in the logs).
With --every it keeps running: a read every --every (at least --window), one report line each, the ready file
after the first (the DaemonSet that ` + "`kubeslow watch install --node-agent`" + ` keeps; the watch reads the newest line).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ProbeBytes < 0 || o.ProbeBytes > 8<<20 || o.Window <= 0 || o.Window > time.Minute || every != 0 && every < o.Window {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--%s [0, 8 MiB], --%s (0, 1m], --%s 0 or at least --%s",
					agentproto.FlagProbeSize, agentproto.FlagWindow, agentproto.FlagEvery, agentproto.FlagWindow)}
			}
			if kubeletDir != "" {
				o.Dirs["kubelet"] = kubeletDir
			}
			if runtimeDir != "" {
				o.Dirs["runtime"] = runtimeDir
			}
			if o.NodeName == "" {
				o.NodeName = os.Getenv("NODE_NAME")
			}
			ctx := common.Context(cmd)
			ver, _ := version.Get()
			enc := json.NewEncoder(streams.Out)
			for first := true; ; first = false {
				start := time.Now()
				h := agent.ReadNodeHost(ctx, o)
				h.AgentVersion = ver
				if ctx.Err() != nil && !first {
					return nil // stopped mid-read: the last whole report stands
				}
				if err := enc.Encode(h); err != nil {
					return &common.ExitError{Code: 2, Err: err}
				}
				if first && readyFile != "" {
					if err := os.WriteFile(readyFile, []byte("done\n"), 0o644); err != nil {
						return &common.ExitError{Code: 2, Err: err}
					}
				}
				if every == 0 {
					if readyFile != "" {
						<-ctx.Done() // one report, then wait to be stopped (a run's DaemonSet)
					}
					return nil
				}
				next := time.NewTimer(max(0, every-time.Since(start)))
				select {
				case <-ctx.Done():
					next.Stop()
					return nil
				case <-next.C:
				}
			}
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Proc, agentproto.FlagProcfs, "/proc", "the host's procfs")
	fl.StringVar(&o.Sys, agentproto.FlagSysfs, "/sys", "the host's sysfs")
	fl.StringVar(&o.Root, agentproto.FlagRootfs, "/", "the host's root (for dev/kmsg, var/log/kern.log)")
	fl.StringVar(&o.NetProc, agentproto.FlagNetProcfs, "/proc", "a procfs of the node's network namespace (the agent's own in a host-network pod)")
	fl.StringVar(&o.NetSys, agentproto.FlagNetSysfs, "/sys", "a sysfs of the node's network namespace, for its interfaces (the agent's own in a host-network pod)")
	fl.StringVar(&o.KubeProxy, agentproto.FlagKubeProxy, "http://127.0.0.1:10249", "kube-proxy's metrics base URL (empty: skip)")
	fl.StringVar(&kubeletDir, agentproto.FlagKubeletDir, "", "a directory on the kubelet's disk (empty: not described)")
	fl.StringVar(&runtimeDir, agentproto.FlagRuntimeDir, "", "a directory on the container runtime's disk (empty: not described)")
	fl.Int64Var(&o.ProbeBytes, agentproto.FlagProbeSize, 1<<20, "bytes written by each directory's sync probe (0: no probe)")
	fl.DurationVar(&o.Window, agentproto.FlagWindow, 2*time.Second, "how long the node is watched: D-state samples, pressure and conntrack growth, DNS queries (eBPF)")
	fl.StringVar(&o.NodeName, agentproto.FlagNodeName, "", "the node's name, as recorded (default $NODE_NAME)")
	fl.BoolVar(&o.DNS, agentproto.FlagDNS, true, "time every pod's UDP DNS queries (the host's cgroup v2 root under --path.rootfs) and TCP connects (a tracepoint) over the read with eBPF (privileged)")
	fl.StringVar(&readyFile, agentproto.FlagReadyFile, "", "after the (first) report, write this file and wait to be stopped")
	fl.DurationVar(&every, agentproto.FlagEvery, 0, "keep running: a read every this long (at least --window), one report line each (0: one read)")
	return cmd
}

// newExists is `kubeslow agent exists FILE`: exit 0 when FILE exists (the node agent's readiness probe;
// the image has no shell).
func newExists(_ common.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:    "exists FILE",
		Short:  "Exit 0 when FILE exists, 1 otherwise",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err != nil {
				return &common.ExitError{Code: 1, Err: fmt.Errorf("%s", strings.TrimSpace(err.Error()))}
			}
			return nil
		},
	}
}
