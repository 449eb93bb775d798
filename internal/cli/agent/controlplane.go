package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// The control-plane tier's agent commands (issue 27): run by exec in the agent pod on a control-plane node
// (host PID and network namespaces), each prints one JSON line, followed by raw bytes for scrape and audit.

type cpFlags struct {
	o agent.ControlPlaneOptions
}

func (f *cpFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.o.Proc, agentproto.FlagProcfs, "/proc", "a procfs of the host's PID namespace")
	fl.StringVar(&f.o.Cgroup, agentproto.FlagCgroupfs, "/sys/fs/cgroup", "the host's cgroup root")
	fl.StringSliceVar(&f.o.ManifestDirs, agentproto.FlagManifestDir, agent.DefaultManifestDirs, "static-pod manifest directories as the host names them (besides the kubelet's own)")
	fl.StringVar(&f.o.NodeName, agentproto.FlagNodeName, "", "the node's name, as recorded (default $NODE_NAME)")
}

func (f *cpFlags) opts() agent.ControlPlaneOptions {
	if f.o.NodeName == "" {
		f.o.NodeName = os.Getenv("NODE_NAME")
	}
	return f.o
}

func newControlPlane(streams common.IOStreams) *cobra.Command {
	var f cpFlags
	cmd := &cobra.Command{
		Use:   "control-plane",
		Short: "Print (one JSON line) the control-plane components in this node's network namespace: kube-apiserver, etcd, kube-scheduler, kube-controller-manager or a k3s/rke2 server, with their flags, manifests, CPU rate, run-queue wait, cgroup quota, throttling and pressure",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.o.Interval < 0 || f.o.Interval > time.Minute {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--%s [0, 1m]", agentproto.FlagInterval)}
			}
			cp, err := agent.ReadControlPlane(common.Context(cmd), f.opts())
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			return json.NewEncoder(streams.Out).Encode(cp)
		},
	}
	f.add(cmd)
	cmd.Flags().DurationVar(&f.o.Interval, agentproto.FlagInterval, time.Second, "time between the two CPU samples the rates come from")
	return cmd
}

func newCPScrape(streams common.IOStreams) *cobra.Command {
	var f cpFlags
	var comp string
	so := agent.ScrapeOptions{}
	cmd := &cobra.Command{
		Use:   "cp-scrape",
		Short: "Print a JSON header line, then at most --max-bytes of a control-plane component's /metrics (etcd, kube-controller-manager or kube-scheduler on this node, at the address its flags give)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if so.MaxBytes <= 0 || so.MaxBytes > 64<<20 || so.Timeout <= 0 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--%s (0, 64 MiB], --%s > 0", agentproto.FlagMaxBytes, agentproto.FlagTimeout)}
			}
			o := f.opts()
			h := agent.ScrapeHeader{Node: o.NodeName, Component: comp}
			var body []byte
			cp, _, err := agent.FindControlPlane(o)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			var c *agent.Component
			for i := range cp.Components {
				if cp.Components[i].Embeds(comp) {
					c = &cp.Components[i]
				}
			}
			if c == nil {
				h.Reason = fmt.Sprintf("no %s in this node's network namespace", comp)
			} else if u, err := agent.MetricsURL(c, comp); err != nil {
				h.PID, h.Reason = c.PID, err.Error()
			} else {
				h.PID = c.PID
				if body, err = agent.Scrape(common.Context(cmd), &h, u, so); err != nil {
					h.Reason = err.Error()
				}
			}
			return writeHeaderBody(streams, h, body)
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&comp, agentproto.FlagComponent, agent.CompEtcd, "etcd, kube-controller-manager or kube-scheduler")
	fl.Int64Var(&so.MaxBytes, agentproto.FlagMaxBytes, 8<<20, "largest body returned (the rest is cut)")
	fl.DurationVar(&so.Timeout, agentproto.FlagTimeout, 10*time.Second, "bound of the scrape")
	fl.StringVar(&so.TokenFile, agentproto.FlagTokenFile, agent.DefaultTokenFile, "bearer token sent to https endpoints")
	return cmd
}

func newCPAudit(streams common.IOStreams) *cobra.Command {
	var f cpFlags
	var cur agent.AuditCursor
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "cp-audit",
		Short: "Print a JSON header line, then at most --max-bytes of whole lines of this node's kube-apiserver audit log (its --audit-log-path and rotated backups) from a cursor (--file, --inode, --offset); --max-bytes 0 prints only the cursor at the log's end",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if maxBytes < 0 || maxBytes > 64<<20 || cur.Offset < 0 {
				return &common.ExitError{Code: 2, Err: fmt.Errorf("--%s [0, 64 MiB], --%s >= 0", agentproto.FlagMaxBytes, agentproto.FlagOffset)}
			}
			o := f.opts()
			h := agent.AuditHeader{Node: o.NodeName}
			cp, _, err := agent.FindControlPlane(o)
			if err != nil {
				return &common.ExitError{Code: 2, Err: err}
			}
			c, logPath, policy, why := agent.AuditLogOf(cp)
			h.Path, h.Policy, h.Reason = logPath, policy, why
			var body []byte
			if c != nil {
				h.PID = c.PID
			}
			if why == "" {
				dir := agent.AuditDir(o.Proc, c.PID, logPath)
				if body, err = agent.ReadAuditChunk(&h, dir, path.Base(logPath), cur, maxBytes); err != nil {
					h.Reason = err.Error()
				}
			}
			return writeHeaderBody(streams, h, body)
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&cur.File, agentproto.FlagFile, "", "cursor: the file's name when the cursor was taken")
	fl.Uint64Var(&cur.Inode, agentproto.FlagInode, 0, "cursor: the file's inode (which a rotation keeps)")
	fl.Int64Var(&cur.Offset, agentproto.FlagOffset, 0, "cursor: the offset in the file")
	fl.Int64Var(&maxBytes, agentproto.FlagMaxBytes, 4<<20, "most bytes returned (whole lines)")
	return cmd
}

// writeHeaderBody writes h as one JSON line, then body as it is.
func writeHeaderBody(streams common.IOStreams, h any, body []byte) error {
	if err := json.NewEncoder(streams.Out).Encode(h); err != nil {
		return &common.ExitError{Code: 2, Err: err}
	}
	if _, err := streams.Out.Write(body); err != nil {
		return &common.ExitError{Code: 2, Err: err}
	}
	return nil
}
