package lab

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/lab"
)

func TestLeaseSummary(t *testing.T) {
	now := time.Now()
	lease := func(ago float64) *lab.NodeLease {
		return &lab.NodeLease{Holder: "kwok", Renewed: now.Add(-time.Duration(ago * float64(time.Second))), DurationSeconds: 40, RenewedAgoSeconds: ago}
	}
	nodes := []lab.NodeStatus{
		{Name: "kwok-node-1", Kind: "kwok", Lease: lease(2)},
		{Name: "kwok-node-2", Kind: "kwok", Lease: lease(9)},
		{Name: "kwok-node-3", Kind: "kwok", Lease: lease(55)},
		{Name: "kwok-node-4", Kind: "kwok"},
		{Name: "lab-node-1", Kind: "real", Lease: lease(4)},
	}
	if got, want := leaseSummary(nodes, "kwok"), "2 held, renewed 2-9s ago (duration 40s), 1 EXPIRED (last renewed up to 55s ago), 1 without a Lease"; got != want {
		t.Errorf("kwok: %q, want %q", got, want)
	}
	if got, want := leaseSummary(nodes, "real"), "1 held, renewed 4-4s ago (duration 40s)"; got != want {
		t.Errorf("real: %q, want %q", got, want)
	}
	if got, want := leaseSummary(nodes[3:4], "kwok"), "none (1 nodes without a Lease in kube-node-lease)"; got != want {
		t.Errorf("none: %q, want %q", got, want)
	}
}

// TestStatusPrometheusURL: the status names the lab's Prometheus URL when the lab runs one, and only then.
func TestStatusPrometheusURL(t *testing.T) {
	for _, withProm := range []bool{false, true} {
		s := &lab.Status{Up: true, Components: []lab.ComponentStatus{{Name: "etcd", PID: 1, Running: true}}, NodesError: "skipped"}
		if withProm {
			s.Components = append(s.Components, lab.ComponentStatus{Name: lab.PrometheusComponent, PID: 2, Running: true})
		}
		var out bytes.Buffer
		if err := writeStatus(common.IOStreams{Out: &out}, s); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "prometheus "+lab.PrometheusURL()+"\n"); got != withProm {
			t.Errorf("with prometheus %v: URL shown %v:\n%s", withProm, got, out.String())
		}
	}
}
