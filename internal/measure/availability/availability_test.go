package availability_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/measure/availability/availabilitytest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestClassify(t *testing.T) {
	body := []byte(availabilitytest.EtcdFailedBody)
	p := availability.Classify(body, apierrors.NewGenericServerResponse(500, "GET", schema.GroupResource{}, "", string(body), 0, true))
	if p.OK || p.Cause != availability.CauseEtcd || !slices.Equal(p.Failing, []string{"etcd"}) {
		t.Errorf("etcd failing: %+v", p)
	}
	// The body lost (the error alone): the failing checks are read from the error's message.
	if p := availability.Classify(nil, apierrors.NewGenericServerResponse(500, "GET", schema.GroupResource{}, "", string(body), 0, true)); p.Cause != availability.CauseEtcd {
		t.Errorf("from the message: %+v", p)
	}
	p = availability.Classify([]byte("[+]ping ok\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n"), apierrors.NewInternalError(errors.New("x")))
	if p.Cause != availability.CauseNotReady || !slices.Equal(p.Failing, []string{"poststarthook/rbac/bootstrap-roles"}) {
		t.Errorf("not ready: %+v", p)
	}
	// An apiserver starting (after a restart) fails etcd's check with its post-start hooks: not an etcd stall
	// (seen on the lab: the restarted apiserver's first answer).
	starting := "[+]ping ok\n[-]etcd failed: reason withheld\n[-]informer-sync failed: reason withheld\n[-]poststarthook/start-apiextensions-controllers failed: reason withheld\n" +
		"[-]poststarthook/crd-informer-synced failed: reason withheld\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed\n"
	if p := availability.Classify([]byte(starting), apierrors.NewInternalError(errors.New("x"))); p.Cause != availability.CauseNotReady || len(p.Failing) != 5 {
		t.Errorf("starting: %+v", p)
	}
	if r := availability.Analyze([]availability.Probe{availability.Classify([]byte(starting), apierrors.NewInternalError(errors.New("x")))}); !strings.Contains(r.Reason, "failing etcd, informer-sync, poststarthook/start-apiextensions-controllers and 2 more") {
		t.Errorf("reason %q", r.Reason)
	}
	if p := availability.Classify(nil, errors.New("connect: connection refused")); p.Cause != availability.CauseUnreachable {
		t.Errorf("refused: %+v", p)
	}
	if p := availability.Classify(nil, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))); p.Cause != availability.CauseForbidden {
		t.Errorf("forbidden: %+v", p)
	}
	if p := availability.Classify([]byte("ok"), nil); !p.OK {
		t.Errorf("ok: %+v", p)
	}
}

// TestAnalyze: an etcd stall and an apiserver restart in one run are two windows, each with its length
// from its first failed probe to the first probe after it, named in the reason; a healthy run passes.
func TestAnalyze(t *testing.T) {
	ps := availabilitytest.Timeline(availabilitytest.S("ok", 3), availabilitytest.S("etcd", 10), availabilitytest.S("ok", 4), availabilitytest.S("refused", 8), availabilitytest.S("ok", 2))
	r := availability.Analyze(ps)
	if err := (&result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "x", Tool: result.Tool{Name: "kubeslow", Version: "v"}, Results: []result.Result{r}, Findings: []result.Finding{}}).Validate(); err != nil {
		t.Fatal(err)
	}
	get := func(name string) float64 {
		m := r.Metric(name, nil)
		if m == nil {
			t.Fatalf("no %s", name)
		}
		return m.Value
	}
	if get(availability.MetricEtcdLongest) != 10 || get(availability.MetricUnreachable) != 8 || get(availability.MetricOutages) != 2 || get(availability.MetricProbes) != 27 {
		t.Errorf("metrics %+v", r.Metrics)
	}
	if r.Status != result.StatusWarn || !strings.Contains(r.Reason, "etcd did not answer the apiserver for 10.0 s") ||
		!strings.Contains(r.Reason, "the apiserver was unreachable for 8.0 s") {
		t.Errorf("%s %q", r.Status, r.Reason)
	}
	ws := availability.Outages(r)
	if len(ws) != 2 || ws[0].Cause != availability.CauseEtcd || ws[0].Start != ps[2*3].T || ws[0].End != ps[2*13].T || ws[1].Cause != availability.CauseUnreachable {
		t.Errorf("windows %+v", ws)
	}
	// Still failing at the end: the window ends at the last probe's answer (ps holds two probes a tick).
	r = availability.Analyze(availabilitytest.Timeline(availabilitytest.S("ok", 2), availabilitytest.S("refused", 3)))
	if ws := availability.Outages(r); len(ws) != 1 || ws[0].Probes != 3 || ws[0].Seconds() < 2 || ws[0].Seconds() > 2.1 {
		t.Errorf("open window %+v", ws)
	}
	if r := availability.Analyze(availabilitytest.Timeline(availabilitytest.S("ok", 20))); r.Status != result.StatusPass || len(r.Records) != 0 {
		t.Errorf("healthy: %s %q %+v", r.Status, r.Reason, r.Records)
	}
}
