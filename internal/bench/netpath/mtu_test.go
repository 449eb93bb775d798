package netpath_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/bench/netpath/netpathtest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func mtuFindings(t *testing.T, m netpathtest.MTURun) []result.Finding {
	t.Helper()
	fs, _ := rule.Evaluate(ruletest.Report(nil, m.Result()), netpath.MTURules())
	return fs
}

// TestMTUHealthy: flannel's MTUs (eth0 1500, flannel.1, cni0 and pods 1450) and a bridge lab's (all 1500) raise
// nothing.
func TestMTUHealthy(t *testing.T) {
	for name, m := range map[string]netpathtest.MTURun{"flannel": netpathtest.MTUHealthyFlannel, "bridge": netpathtest.MTUHealthyBridge} {
		if fs := mtuFindings(t, m); len(fs) != 0 {
			t.Errorf("%s: findings %+v", name, fs)
		}
	}
}

// TestMTUPodWrong: pods at 1500 on a VXLAN overlay: the pod's eth0 and both nodes' cni0 are named with the MTU
// they should have (1450), the DF probe and the ICMP sent are in the text.
func TestMTUPodWrong(t *testing.T) {
	fs := mtuFindings(t, netpathtest.MTUPodWrong)
	if len(fs) != 1 || fs[0].ID != "KS-NET-MTU" {
		t.Fatalf("findings %+v", fs)
	}
	keys := map[string]bool{}
	for _, it := range fs[0].Items {
		keys[it.Key] = true
	}
	for _, k := range []string{"link=pod on n1/eth0", "link=node n1/cni0", "link=node n2/cni0"} {
		if !keys[k] {
			t.Errorf("no item %s in %v", k, keys)
		}
	}
	all := fs[0].Summary
	for _, it := range fs[0].Items {
		all += "\n" + it.Summary
	}
	for _, want := range []string{"MTU 1500, 50 bytes above the 1450 it should have (uplink eth0 1500 minus the overlay's overhead: vxlan flannel.1 (+50))",
		"fragmentation needed: MTU 1450 from 198.18.1.1 (1x)", "node n1 icmp_dest_unreach_sent +2"} {
		if !strings.Contains(all, want) {
			t.Errorf("finding text lacks %q:\n%s", want, all)
		}
	}
}

// TestMTUTransit: every link right, the DF probe stops at 1350: the path is named, as a black hole (no ICMP).
func TestMTUTransit(t *testing.T) {
	fs := mtuFindings(t, netpathtest.MTUTransit)
	if len(fs) != 1 || len(fs[0].Items) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	s := fs[0].Items[0].Summary
	for _, want := range []string{"at most 1350 bytes", "100 below the pod's MTU 1450", "should be at 1350", "black hole"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q: %s", want, s)
		}
	}
}
