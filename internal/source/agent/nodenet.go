package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/sysfs"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// NodeNet is what a network namespace (a node's, from a host-network agent; a pod's, from a pod) shows of
// the things that make a data path slow: interfaces and their MTU and kind (an overlay's VXLAN or Geneve
// device), conntrack's fill, the neighbour (ARP) table against its hard limit, and kube-proxy's mode and
// rule count from its metrics endpoint.
type NodeNet struct {
	Interfaces []Iface `json:"interfaces"`
	// Conntrack entries and the table's limit (-1: not readable here).
	ConntrackEntries int64 `json:"conntrack_entries"`
	ConntrackMax     int64 `json:"conntrack_max"`
	// ConntrackStat is /proc/net/stat/nf_conntrack's counters summed over the CPUs, by column name
	// (hostfs.ParseConntrackStat); ConntrackStatWindow is their growth over the node agent's watch (insert_failed
	// rising with DNS lookups: the UDP DNAT race).
	ConntrackStat       map[string]uint64 `json:"conntrack_stat,omitempty"`
	ConntrackStatWindow map[string]uint64 `json:"conntrack_stat_window,omitempty"`
	// Neighbours in the IPv4 ARP table and its gc_thresh3 (the hard limit: beyond it the kernel drops
	// entries and logs "neighbor table overflow"), -1 when not readable.
	Neighbours   int64 `json:"neighbours"`
	NeighThresh3 int64 `json:"neigh_gc_thresh3"`
	// NeighThresh1 (below it the garbage collector leaves entries alone) and NeighThresh2 (the soft limit:
	// above it entries older than 5 s are collected), -1 when not readable.
	NeighThresh1  int64  `json:"neigh_gc_thresh1"`
	NeighThresh2  int64  `json:"neigh_gc_thresh2"`
	KubeProxyMode string `json:"kube_proxy_mode,omitempty"`
	// KubeProxyRules by table ("nat", or "nat/IPv4" when kube-proxy labels the IP family) from
	// kubeproxy_sync_proxy_rules_iptables_total (iptables mode).
	KubeProxyRules map[string]int64 `json:"kube_proxy_rules,omitempty"`
	// KubeProxySyncP99 is the p99 of its rule sync duration in seconds (0: not known).
	KubeProxySyncP99 float64 `json:"kube_proxy_sync_p99_seconds,omitempty"`
	// Uplink is the interface of the namespace's default route (/proc/net/route): a node's NIC, a pod's eth0.
	Uplink string `json:"uplink,omitempty"`
	// Snmp are the namespace's IP and ICMP counters of fragmentation and MTU trouble (nil: not readable).
	Snmp *SnmpCounters `json:"snmp,omitempty"`
	// Unread says what could not be read and why (a missing file is not an error: it is reported).
	Unread []string `json:"unread,omitempty"`
}

// Keys of NodeNet.ConntrackStat that the node sweep reads: hostfs's names of the kernel's columns.
const (
	ConntrackInsertFailed = hostfs.ConntrackInsertFailed
	ConntrackDrop         = hostfs.ConntrackDrop
)

// SnmpCounters are /proc/net/snmp's counters that show MTU trouble: IP packets this namespace had to fragment
// and could not (DF set: FragFails), and ICMP destination-unreachable messages it sent (OutDestUnreachs,
// IcmpMsg OutType3), "fragmentation needed" among them.
type SnmpCounters struct {
	IPFragFails         float64 `json:"ip_frag_fails"`
	IPFragCreates       float64 `json:"ip_frag_creates"`
	ICMPOutDestUnreachs float64 `json:"icmp_out_dest_unreachs"`
	ICMPOutType3        float64 `json:"icmp_out_type3"`
	ICMPInDestUnreachs  float64 `json:"icmp_in_dest_unreachs"`
}

// Iface is one network interface.
type Iface struct {
	Name string `json:"name"`
	MTU  int    `json:"mtu"`
	// Kind from the device type (vxlan, geneve, bridge, wireguard...); empty for plain devices (veth, NICs).
	Kind string `json:"kind,omitempty"`
	Up   bool   `json:"up"`
}

// Overlay returns the interfaces of an encapsulating kind.
func (n *NodeNet) Overlay() []Iface {
	var out []Iface
	for _, i := range n.Interfaces {
		switch i.Kind {
		case "vxlan", "geneve", "ipip", "gre", "wireguard", "fou":
			out = append(out, i)
		}
	}
	return out
}

// NodeNetRoots are where ReadNodeNet reads (node_exporter's --path.procfs/--path.sysfs): tests point them at a
// fixture tree.
type NodeNetRoots struct {
	Proc, Sys string
	// KubeProxy is kube-proxy's metrics base URL ("" skips it).
	KubeProxy string
}

// ReadNodeNet reads the namespace's network facts; what cannot be read is listed in Unread.
func ReadNodeNet(ctx context.Context, r NodeNetRoots) *NodeNet {
	n := &NodeNet{ConntrackEntries: -1, ConntrackMax: -1, Neighbours: -1, NeighThresh1: -1, NeighThresh2: -1, NeighThresh3: -1}
	unread := func(what string, err error) { n.Unread = append(n.Unread, fmt.Sprintf("%s: %v", what, err)) }
	// The interfaces are class/net's entries, as listed (procfs's NetClassDevices would leave out a regular file
	// such as bonding_masters, which this list has always kept); each one's mtu and operstate are read by
	// procfs's sysfs parser, one attribute at a time (NetClassByIface reads every attribute and fails the
	// interface on any one it cannot read; an attribute that cannot be read leaves its zero value, as before).
	// procfs does not read uevent (the device type): that one is read here.
	dir := filepath.Join(r.Sys, "class/net")
	ents, err := os.ReadDir(dir)
	if err != nil {
		unread("interfaces", err)
	}
	for _, e := range ents {
		if e.Name() == "lo" {
			continue
		}
		i := Iface{Name: e.Name()}
		var nc sysfs.NetClassIface
		for _, attr := range []string{"mtu", "operstate"} {
			_ = sysfs.ParseNetClassAttribute(filepath.Join(dir, e.Name()), attr, &nc)
		}
		if nc.MTU != nil {
			i.MTU = int(*nc.MTU)
		}
		i.Up = nc.OperState == "up" || nc.OperState == "unknown" // tunnels report "unknown" when working
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "uevent")); err == nil {
			i.Kind = ueventDevtype(b)
		}
		n.Interfaces = append(n.Interfaces, i)
	}
	sort.Slice(n.Interfaces, func(a, b int) bool { return n.Interfaces[a].Name < n.Interfaces[b].Name })
	readInt := func(what, path string, dst *int64) {
		b, err := os.ReadFile(filepath.Join(r.Proc, path))
		if err != nil {
			if strings.Contains(path, "/neigh/") && os.IsNotExist(err) {
				err = fmt.Errorf("%w (the kernel shows gc_thresh only in the initial network namespace; this is another one)", err)
			}
			unread(what, err)
			return
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			unread(what, err)
			return
		}
		*dst = v
	}
	readInt("conntrack entries", "sys/net/netfilter/nf_conntrack_count", &n.ConntrackEntries)
	if st, err := (hostfs.FS{Proc: r.Proc}).ConntrackStat(); err != nil {
		unread("conntrack statistics", err)
	} else {
		n.ConntrackStat = st
	}
	readInt("conntrack limit", "sys/net/netfilter/nf_conntrack_max", &n.ConntrackMax)
	readInt("neighbour limit", "sys/net/ipv4/neigh/default/gc_thresh3", &n.NeighThresh3)
	readInt("neighbour gc_thresh1", "sys/net/ipv4/neigh/default/gc_thresh1", &n.NeighThresh1)
	readInt("neighbour gc_thresh2", "sys/net/ipv4/neigh/default/gc_thresh2", &n.NeighThresh2)
	proc := hostfs.FS{Proc: r.Proc, Sys: r.Sys}
	if c, err := proc.Neighbours(); err != nil {
		unread("neighbours", err)
	} else {
		n.Neighbours = c
	}
	if up, err := proc.Uplink(); err != nil {
		unread("routes", err)
	} else {
		n.Uplink = up
	}
	if s, err := readSnmp(r.Proc); err != nil {
		unread("snmp", err)
	} else {
		n.Snmp = s
	}
	if r.KubeProxy != "" {
		if err := n.readKubeProxy(ctx, r.KubeProxy); err != nil {
			unread("kube-proxy", err)
		}
	}
	return n
}

// ueventDevtype returns DEVTYPE= of a device's uevent.
func ueventDevtype(b []byte) string {
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("DEVTYPE=")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

func (n *NodeNet) readKubeProxy(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	get := func(path string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(base, "/")+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
		}
		return b, err
	}
	mode, err := get("/proxyMode")
	if err != nil {
		return err
	}
	n.KubeProxyMode = strings.TrimSpace(string(mode))
	body, err := get("/metrics")
	if err != nil {
		return err
	}
	return n.kubeProxyMetrics(body)
}

// kubeProxyMetrics takes the rule count and the sync p99 from kube-proxy's metrics (text format).
func (n *NodeNet) kubeProxyMetrics(body []byte) error {
	snap, err := prom.Parse(bytes.NewReader(body), time.Now())
	if err != nil {
		return err
	}
	for _, s := range snap.Series("kubeproxy_sync_proxy_rules_iptables_total") {
		if n.KubeProxyRules == nil {
			n.KubeProxyRules = map[string]int64{}
		}
		table := s.Labels["table"]
		if table == "" {
			table = "all"
		}
		if f := s.Labels["ip_family"]; f != "" { // dual-stack kube-proxy: one set of rules per family
			table += "/" + f
		}
		n.KubeProxyRules[table] = int64(s.Value)
	}
	for _, s := range snap.Series("kubeproxy_sync_proxy_rules_duration_seconds") {
		if s.Hist != nil {
			if v, ok := s.Hist.Quantile(0.99); ok {
				n.KubeProxySyncP99 = v
			}
		}
	}
	return nil
}

// growth is each counter's increase from a to b (a counter that went backwards grew by 0).
func growth(a, b map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(b))
	for k, v := range b {
		if k == "entries" {
			continue
		}
		if v >= a[k] {
			out[k] = v - a[k]
		} else {
			out[k] = 0
		}
	}
	return out
}

// readSnmp reads the namespace's /proc/<self>/net/snmp with prometheus/procfs.
func readSnmp(proc string) (*SnmpCounters, error) {
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return nil, err
	}
	self, err := fs.Self()
	if err != nil {
		return nil, err
	}
	s, err := self.Snmp()
	if err != nil {
		return nil, err
	}
	v := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return &SnmpCounters{IPFragFails: v(s.FragFails), IPFragCreates: v(s.FragCreates), ICMPOutDestUnreachs: v(s.OutDestUnreachs),
		ICMPOutType3: v(s.OutType3), ICMPInDestUnreachs: v(s.InDestUnreachs)}, nil
}
