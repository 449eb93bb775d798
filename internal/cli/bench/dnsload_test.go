package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kubeslow/kubeslow/internal/cli/common"
	"github.com/kubeslow/kubeslow/internal/load/dnsload"
)

// TestStepMetricsPerKind: a step's failures are also split by name kind, so that external names failing at an
// upstream's limit are told apart from cluster names answered.
func TestStepMetricsPerKind(t *testing.T) {
	res := &dnsload.Result{Rate: 600, Elapsed: 5 * time.Second, Latency: hdrhistogram.New(1, 60e6, 3), SchedLate: hdrhistogram.New(1, 60e6, 3),
		Counts: dnsload.Counts{Sent: 3000, Answered: 2850, Timeouts: 150},
		ByKind: map[dnsload.Kind]*dnsload.Counts{
			dnsload.KindExternal: {Sent: 1500, Answered: 1350, Timeouts: 140, ServFail: 10},
			dnsload.KindService:  {Sent: 1500, Answered: 1500},
			dnsload.KindNX:       {},
		}}
	got := map[string]float64{}
	for _, m := range StepMetrics(dnsload.Step{Result: res}, map[string]string{"server": "s:53"}) {
		if m.Labels["server"] != "s:53" {
			t.Errorf("%s lost the step's labels: %v", m.Name, m.Labels)
		}
		got[m.Name+"/"+m.Labels["kind"]] = m.Value
	}
	if got["kind_failed_share/external"] != 0.1 || got["kind_failed_share/service"] != 0 || got["kind_sent/external"] != 1500 {
		t.Errorf("per kind: %v", got)
	}
	if _, ok := got["kind_failed_share/nxdomain"]; ok {
		t.Error("a kind with nothing sent has a failed share")
	}
	if got["timeouts/"] != 150 || got["sent/"] != 3000 {
		t.Errorf("step totals: %v", got)
	}
}

// TestDNSLoadInClusterFlags: in the cluster a fixed --rate is one step of --duration, bounded like a ramp,
// and --name (which only a SERVER on the command line reads) is refused rather than ignored; both before any
// cluster is reached.
func TestDNSLoadInClusterFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--image", "r/kubeslow:x", "--name", "service=a.default.svc.cluster.local"}, "--name and --names-file"},
		{[]string{"--image", "r/kubeslow:x", "--rate", "100", "--duration", "10m"}, "ramp of 1 steps of 10m0s"},
	} {
		var out, errb bytes.Buffer
		cmd := newDNSLoad(common.IOStreams{Out: &out, ErrOut: &errb})
		cmd.SetArgs(c.args)
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		err := cmd.Execute()
		var ee *common.ExitError
		if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want exit 2 with %q", c.args, err, c.want)
		}
	}
}
