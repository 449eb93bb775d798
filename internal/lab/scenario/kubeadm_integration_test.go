package scenario_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode/cpnodetest"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
	"github.com/kubeslow/kubeslow/internal/source/hostfs"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationKubeadm is the one kubeadm lab of the integration suite: `lab up --layout kubeadm` (one kwok
// and one real node, etcd on a block device) and, on it, one case after another, each scenario started and
// stopped in turn:
//   - layout: the control-plane Node registered, Ready, labelled and tainted as kubeadm marks it; the four
//     components as static pods whose mirror pods run in kube-system with kubeadm's labels; etcd's metrics on
//     127.0.0.1:2381 and kube-controller-manager's and kube-scheduler's ports on 127.0.0.1 only, inside the
//     node's namespace; the audit log named by --audit-log-path grows; `lab status` says the layout; the node
//     agent (cpnodetest.Check) finds the components there and not on the worker;
//   - then `kubeslow run` given only the lab's kubeconfig (no --etcd-endpoint, no --audit-log, no lab hints;
//     the agent image as --agent-image gives it), the node tier through the agent on the control-plane node:
//     healthy (the whole run: nothing at warning or above, each node-tier signal said to come from the node
//     agent; run as a user holding only view and `kubeslow rbac`'s roles: nothing skipped or failed for a
//     permission), list-storm (the
//     client named from the audit file the flag names), slow-etcd-disk and etcd-disk-bandwidth (etcd's slow
//     fsync, by two mechanisms) and a CPU cgroup of the test's own confining kube-apiserver and etcd, named
//     from the node tier, control-plane-hog (a pod with no limit spinning on every core beside them, named
//     from the node tier's run-queue wait) and control-plane-neighbour (a host process outside Kubernetes in a
//     heavier cgroup beside kubepods: the starvation the cause, at warning or above, what it slowed folded
//     under it); each CPU case eases its fault once its window is over (the cgroup's storm paused, the
//     hog's and the neighbour's CPU weight lowered), for the run's own reads and cleanup. (small-control-plane, the same confinement in the lab's own
//     cgroup with a 128-client storm, is left to the managed lab's TestIntegrationControlPlaneSaturation: here
//     its agent pod was once not created within 5 minutes through the starved apiserver, a CI flake, and the
//     test's own cgroup covers the mechanism);
//   - `lab down` leaves nothing, the static pods' processes included.
func TestIntegrationKubeadm(t *testing.T) {
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// etcd on a block device in memory: the disk scenarios throttle that device, and the healthy lab's fsyncs
	// wait neither on the machine's shared disk nor on a kernel thread of a busy machine.
	cfg := lab.Config{Layout: lab.LayoutKubeadm, Nodes: 1, RealNodes: 1, AgentBinary: labtest.Binary(t),
		Etcd: lab.EtcdStorage{Kind: "device", Path: memoryBlockDevice(ctx, t)}, ImagePulls: lab.ImagePullSettings{Serialize: true}}
	for _, name := range []string{"slow-etcd-disk", "etcd-disk-bandwidth"} {
		get(t, name).Configure(&cfg)
	}
	if cfg.Etcd.Kind != "device" {
		t.Fatalf("the etcd disk scenarios replaced the block device given: %+v", cfg.Etcd)
	}
	start := time.Now()
	rc, down := labtest.Up(t, d, func() error { _, err := lab.Up(ctx, d, cfg, t.Logf); return err })
	downed := false
	defer func() {
		if !downed {
			down()
		}
	}()
	t.Logf("lab up --layout kubeadm (1 kwok, 1 real node) took %s", time.Since(start).Round(100*time.Millisecond))
	c := kubernetes.NewForConfigOrDie(rc)

	// agentWait bounds the wait for the node agent: the default, or longer where the control plane is starved
	// (the agent's pod is created and reported through that apiserver: under 0.1 core and a storm on a machine
	// busy with other work, a DaemonSet's was not created within the default 2 minutes).
	agentWait := cpnode.DefaultOptions(lab.AgentImage).Timeout
	// windowOver, where a CPU case sets it, runs as soon as the run's observation window is over
	// (runner.WindowOver), before the results are read: there the case eases its fault, and the reads at the
	// window's end (counters the window ran up) and the run's end go at full speed: through the starved
	// apiserver they took 85 s (control-plane-neighbour) and 40 s (foreign-cpu-cgroup) on 2026-11-30. Until
	// then the cases eased once the run's last result was in (the run's end took 7-14 s and 3-5 s before,
	// 0.3-0.7 s and 0.2-0.3 s after, 2026-11-29).
	var windowOver func()
	defaultWindow := measure.Options{}.Defaults().Window
	// stamped is t.Logf with the seconds since `lab up` began before each line: where a case's time goes (the
	// scenario's start, the waits, the run's steps) reads from its progress lines.
	stamped := func(t *testing.T) func(string, ...any) {
		return func(format string, args ...any) {
			t.Helper()
			t.Logf("[%6.1fs] "+format, append([]any{time.Since(start).Seconds()}, args...)...)
		}
	}
	// lowerWeight is a CPU case's ease (cpuRuns): once the window is over, the cgroup dir() finds (what names it
	// in the log) gets the least CPU weight; what it returns gives the weight back, then runs restored (if any).
	// Where the cgroup cannot be found or set, the fault stays at its weight to the case's end.
	lowerWeight := func(t *testing.T, what string, dir func() (string, error), restored func()) func() func() {
		return func() func() {
			d, err := dir()
			var had int
			if err == nil {
				had, err = cpuWeight(d, 0)
			}
			if err != nil {
				t.Logf("easing %s: %v (it runs at its weight to the case's end)", what, err)
				return nil
			}
			stamped(t)("the window over: %s's CPU weight %d lowered for the reads and the run's end", what, had)
			return func() {
				if _, err := cpuWeight(d, had); err != nil {
					t.Fatal(err)
				}
				if restored != nil {
					restored()
				}
			}
		}
	}
	// run is `kubeslow run` of the measurements only (all: none given) over window: the product's default
	// (defaultWindow) for the whole run and the CPU cases, shorter where a case's evidence is a rate or a p99
	// that a shorter window still holds with a margin (listStormWindow, etcdDiskWindow; each such case logs
	// its margin).
	//
	// runAs is run as the user of config, each progress line also given to line (nil: none).
	var runAs func(t *testing.T, config *rest.Config, line func(string), window time.Duration, only ...string) (*result.Report, map[string]*result.Finding)
	run := func(t *testing.T, window time.Duration, only ...string) (*result.Report, map[string]*result.Finding) {
		t.Helper()
		return runAs(t, rest.CopyConfig(rc), nil, window, only...)
	}
	runAs = func(t *testing.T, config *rest.Config, line func(string), window time.Duration, only ...string) (*result.Report, map[string]*result.Finding) {
		t.Helper()
		ms, err := catalogue.Registry(catalogue.Options{Window: window, Image: lab.AgentImage}).Select(only, nil)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		opts := cpnode.DefaultOptions(lab.AgentImage)
		opts.Timeout = agentWait
		progress, whenOver := stamped(t), windowOver
		rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: config, Name: "lab-kubeconfig"},
			Measurements: ms, Rules: check.Rules(), Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), NodeTier: cpnode.NewShared(opts),
			Progress: func(format string, args ...any) {
				t.Helper()
				progress(format, args...)
				if line != nil {
					line(fmt.Sprintf(format, args...))
				}
				if format == runner.WindowOver && whenOver != nil {
					whenOver()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run of %v took %s", only, time.Since(began).Round(100*time.Millisecond))
		for _, r := range rep.Results {
			t.Logf("result %s: %s %s", r.Name, r.Status, r.Reason)
			for _, o := range r.OutOfReach {
				t.Logf("  out of reach: %s: %s", o.Signal, o.Why)
			}
			// The API's p99 against its SLO in every window: how far a CPU case's fault stays from breaking
			// it (the retried windows below), for the record.
			for _, m := range r.Metrics {
				if m.Name == apislo.MetricLatencyP99Single && m.Value >= 0.1 {
					t.Logf("  %s %s %s: %s", m.Name, m.Labels["verb"], m.Labels["resource"], result.FormatQuantity(m.Value, m.Unit))
				}
			}
		}
		got := map[string]*result.Finding{}
		for i, f := range rep.Findings {
			t.Logf("finding %s (%s): %s", f.ID, f.Severity, f.Summary)
			got[f.ID] = &rep.Findings[i]
			for j, s := range f.SeenAlso { // one cause seen by two sources: the other's view sits under it
				t.Logf("  seen also by %s: %s", s.ID, s.Summary)
				if got[s.ID] == nil {
					got[s.ID] = &result.Finding{ID: s.ID, Summary: f.SeenAlso[j].Summary}
				}
			}
		}
		return rep, got
	}
	// start starts the scenario on the running lab and stops it when the subtest ends.
	start1 := func(t *testing.T, sc scenario.Scenario) {
		t.Helper()
		if !sc.Supports(lab.LayoutKubeadm) || sc.Start == nil || sc.Stop == nil {
			t.Fatalf("scenario %s: layouts %v, Start %v, Stop %v: want kubeadm, both", sc.Name, sc.Layouts, sc.Start != nil, sc.Stop != nil)
		}
		t.Cleanup(func() {
			if err := sc.Stop(context.WithoutCancel(ctx), d, &cfg, stamped(t)); err != nil {
				t.Errorf("stopping %s: %v", sc.Name, err)
			}
		})
		if err := sc.Start(ctx, d, &cfg, stamped(t)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(t *testing.T, sc scenario.Scenario, got map[string]*result.Finding) {
		t.Helper()
		for _, id := range sc.Expect {
			if got[id] == nil {
				t.Errorf("scenario %s: %s not reported", sc.Name, id)
			}
		}
	}

	t.Run("layout", func(t *testing.T) { kubeadmLayout(ctx, t, d, rc, c) })

	// healthy: the whole run on the healthy lab, as a user holding only ClusterRole view and the two ClusterRoles
	// `kubeslow rbac` prints (applied from its output), with a client certificate of the lab's CA: nothing at
	// warning or above, each node-tier signal said to come from the node agent, and nothing skipped or failed
	// for a permission (a skip would be a rule missing from `kubeslow rbac`). Until 2026-11-30 the viewer's run
	// was TestIntegrationRBACViewUser's kubeadm half (the quick profile, on a lab of its own: ~65 s with its lab
	// start), then a case of its own here (~27 s); the managed layout's is still that test's.
	t.Run("healthy", func(t *testing.T) {
		rbacYAML, err := exec.CommandContext(ctx, cfg.AgentBinary, "rbac").Output()
		if err != nil {
			t.Fatalf("kubeslow rbac: %v", err)
		}
		viewer, err := clientcmd.BuildConfigFromFlags("", labtest.ViewerKubeconfig(ctx, t, d, rc.Host, c, string(rbacYAML)))
		if err != nil {
			t.Fatal(err)
		}
		// The whole run, not the node tier's three alone: the DNS probes' pods land on the control-plane node
		// too (they tolerate every taint), which reach kube-dns only through its kube-proxy.
		var lines []string
		// The lab's real nodes share this machine's kernel: an I/O pressure finding passes only when the
		// test's own reading of the machine's pressure bears it out (labtest.IOStall).
		stall := labtest.SampleIOStall(ctx, t, 100*time.Millisecond)
		from := time.Now()
		rep, _ := runAs(t, viewer, func(l string) { lines = append(lines, l) }, defaultWindow)
		to := time.Now()
		kinds := map[string]measure.Kind{}
		for _, m := range catalogue.Registry(catalogue.Options{}).All() {
			kinds[m.Name()] = measure.KindOf(m)
		}
		labtest.CheckViewerRun(ctx, t, rep, strings.Join(lines, "\n"), func(name string) bool { return kinds[name] == measure.ReadOnly }, nil, c)
		for name, says := range map[string]string{etcdhealth.Name: "etcd read by the node agent on " + lab.ControlPlaneNodeName,
			"api.audit": "read by the node agent on " + lab.ControlPlaneNodeName, cpusage.Name: "read by the node agent"} {
			r := rep.Result(name)
			if r == nil || r.Status != result.StatusPass || !strings.Contains(r.Reason, says) {
				t.Errorf("%s: %+v, want Pass saying %q", name, r, says)
				continue
			}
			if len(r.OutOfReach) > 0 {
				t.Errorf("%s: out of reach %+v with the node tier up", name, r.OutOfReach)
			}
		}
		if r := rep.Result(etcdhealth.Name); r != nil {
			m := r.Metric(etcdhealth.MetricWALFsyncP99, map[string]string{"source": cpnode.SourceNodeAgent, "node": lab.ControlPlaneNodeName})
			if m == nil {
				t.Errorf("etcd.health has no WAL fsync p99 labelled source=node-agent, node=%s: %+v", lab.ControlPlaneNodeName, r.Metrics)
			}
		}
		if r := rep.Result("api.audit"); r != nil && r.Metric("audit_source", map[string]string{"source": cpnode.SourceNodeAgent, "node": lab.ControlPlaneNodeName}) == nil {
			t.Errorf("api.audit does not name the node and file: %+v", r.Metrics)
		}
		if r := rep.Result(cpusage.Name); r != nil {
			for _, comp := range []string{cpusage.APIServer, cpusage.Etcd, "kube-scheduler", "kube-controller-manager"} {
				if r.Metric(cpusage.MetricComponentCPUCores, map[string]string{"component": comp, "source": cpnode.SourceNodeAgent}) == nil {
					t.Errorf("controlplane.usage: no %s of %s from the node agent", cpusage.MetricComponentCPUCores, comp)
				}
			}
			if c := r.Metric(cpusage.MetricCoresAvailable, nil); c == nil || !strings.HasPrefix(c.Labels["source"], "node agent") {
				t.Errorf("controlplane.usage: cores available %+v, want the node agent's", c)
			}
		}
		for _, f := range rep.Findings {
			if f.Severity.Rank() >= result.SeverityWarning.Rank() && !stall.Explains(t, f, from, to, nodeagent.DefaultOptions("").Window) {
				t.Errorf("healthy kubeadm lab: finding %s (%s): %s", f.ID, f.Severity, f.Summary)
			}
		}
	})

	t.Run("list-storm", func(t *testing.T) {
		sc := get(t, "list-storm")
		start1(t, sc)
		// The storm has begun before the window: the apiserver has answered 40 LISTs of Events from it.
		waitRequests(ctx, t, rc, "40 LISTs of events", 40, func(l map[string]string) bool { return l["verb"] == "LIST" && l["resource"] == "events" })
		// A 10 s window: both rules read rates (LISTs a minute, bytes a second) and the client's share of the
		// LISTs, which a window half the default's still holds many LISTs of (~190 at the storm's designed rate):
		// the runs of 2026-11-29 19:48 and 20:01 read 1,109-1,144 LISTs a minute (18x KS-AUDIT-LIST's 60; 1,146
		// in a 20 s window), 100% of the window's 158 LISTs (twice the rule's half), returning 2.38 MB/s (2.3x
		// KS-API-LIST-BYTES' 1 MiB/s).
		rep, got := run(t, listStormWindow, "api.")
		// The verdict of the node tier is the client, from the audit file: KS-AUDIT-LIST. KS-API-LIST-BYTES (the
		// API tier's view) needs the storm's LISTs to return over 1 MiB/s: on a machine loaded by others the
		// storm's own 20 clients fell to 137 LISTs a minute (~1,200 designed) and stayed under it, so it is
		// asserted only where the apiserver's LIST volume of Events crossed the rule's threshold.
		want := sc
		want.Expect = []string{"KS-AUDIT-LIST"}
		if r := rep.Result("api.responsiveness"); r != nil {
			if m := r.Metric("list_bytes_per_second", map[string]string{"resource": "events"}); m != nil {
				t.Logf("LISTs of events returned %s", result.FormatQuantity(m.Value, m.Unit))
				if m.Value > 1<<20 {
					want.Expect = sc.Expect
				}
			}
		}
		expect(t, want, got)
		if f := got["KS-AUDIT-LIST"]; f != nil && !strings.Contains(f.Summary, "node-monitor/1.0") {
			t.Errorf("KS-AUDIT-LIST does not name the storm's client %q: %s", scenario.ListStormUserAgent, f.Summary)
		}
		// The margins the window left KS-AUDIT-LIST: the storm's share of the LISTs against the rule's 0.5 and its
		// LISTs a minute against the rule's 60, for the record.
		if r := rep.Result("api.audit"); r != nil {
			storm := map[string]string{"user_agent": auditlog.AgentName(scenario.ListStormUserAgent)}
			share, rate := r.Metric(auditlog.MetricListShare, storm), r.Metric(auditlog.MetricListsPerMinute, storm)
			lists := r.Metric("lists", nil)
			if share != nil && rate != nil && lists != nil {
				t.Logf("the storm's LISTs in the %s window: %.0f%% of %.0f LISTs (rule: over 50%%), %.0f a minute (rule: over 60)",
					listStormWindow, share.Value*100, lists.Value, rate.Value)
			}
		}
		if r := rep.Result("api.audit"); r == nil || r.Metric("audit_source", map[string]string{"source": cpnode.SourceNodeAgent, "node": lab.ControlPlaneNodeName}) == nil {
			t.Errorf("api.audit did not read the audit log through the node agent on %s: %+v", lab.ControlPlaneNodeName, r)
		}
	})

	for _, name := range []string{"slow-etcd-disk", "etcd-disk-bandwidth"} {
		t.Run(name, func(t *testing.T) {
			sc := get(t, name)
			start1(t, sc)
			// A 12 s window: the WAL fsync p99 of the fsyncs the node agent reads from its first scrape (once it
			// has started, ~4 s in) to the window's end, which needs etcdhealth.MinSamples of them. The runs of
			// 2026-11-29 19:48 and 20:01 read 16-26 fsyncs in 10 s windows (3-5x the 5 needed; ~2.7-4.3 a
			// second after the agent's start) at p99 0.24-0.25 s (24x the rule's 0.01 s); 12 s keeps that margin
			// where the agent starts a few seconds later on a busier machine.
			rep, got := run(t, etcdDiskWindow, etcdhealth.Name)
			expect(t, sc, got)
			r := rep.Result(etcdhealth.Name)
			if r == nil {
				t.Fatal("no etcd.health")
			}
			m := r.Metric(etcdhealth.MetricWALFsyncP99, map[string]string{"source": cpnode.SourceNodeAgent, "node": lab.ControlPlaneNodeName})
			if m == nil || m.Value <= etcdhealth.FsyncP99Max {
				t.Errorf("WAL fsync p99 from the node agent on %s: %+v, want > %g s", lab.ControlPlaneNodeName, m, etcdhealth.FsyncP99Max)
			} else {
				n := r.Metric("wal_fsync_samples", nil)
				if n == nil {
					n = &result.Metric{}
				}
				t.Logf("WAL fsync p99 %s (%.0fx the rule's %g s) of %.0f fsyncs in the %s window (a p99 needs %d)",
					result.FormatQuantity(m.Value, m.Unit), m.Value/etcdhealth.FsyncP99Max, etcdhealth.FsyncP99Max, n.Value, etcdDiskWindow, etcdhealth.MinSamples)
			}
		})
	}

	// The CPU cases: the storm has built up before the window (200 409s answered); KS-CP-SATURATED names a
	// component, from the node tier, on the control-plane node.
	// cpuRuns returns the runs of a CPU case's windows, the node agent given longer to start, each window's fault
	// eased once the window is over (ease, nil: the fault stays to the case's end; see windowOver), and what
	// ends them. ease lifts the fault and returns what puts it back, which the next window runs first.
	cpuRuns := func(t *testing.T, ease func() (restore func()), only ...string) (next func() (*result.Report, map[string]*result.Finding), end func()) {
		agentWait = 5 * time.Minute
		var restore func()
		if ease != nil {
			windowOver = func() { restore = ease() }
		}
		return func() (*result.Report, map[string]*result.Finding) {
				t.Helper()
				if restore != nil {
					restore()
					restore = nil
				}
				return run(t, defaultWindow, only...)
			}, func() {
				agentWait = cpnode.DefaultOptions(lab.AgentImage).Timeout
				windowOver = nil
			}
	}
	saturated := func(t *testing.T, ease func() (restore func())) (*result.Finding, *result.Result) {
		t.Helper()
		window, end := cpuRuns(t, ease, "api.responsiveness", cpusage.Name)
		defer end()
		rep, got := window()
		// As in starvedBy: a window where the API kept its SLO near enough to miss it next (mayMissNext) is measured
		// again, twice at most, and the case is skipped after the last (the local CI of 2026-11-29: 0.1 core,
		// yet 1,850 409s a minute answered within the SLO); an SLO missed with no KS-CP-SATURATED fails.
		windows := 1
		for ; windows < 3 && got["KS-CP-SATURATED"] == nil && got["KS-API-LATENCY"] == nil && mayMissNext(rep, nearSLO); windows++ {
			t.Logf("the API kept its SLO in this window (no KS-API-LATENCY; p99 %.3g s): measuring again (run %d of 3)", worstP99(rep), windows+1)
			rep, got = window()
		}
		t.Logf("the API's worst p99 in window %d: %.3g s, %.2fx its SLO of %g s", windows, worstP99(rep), worstP99(rep)/apislo.SLOSingle, apislo.SLOSingle)
		f := got["KS-CP-SATURATED"]
		if f == nil && got["KS-API-LATENCY"] == nil {
			t.Skipf("the API kept its SLO in %d window(s) under this confinement on this machine (p99 %.3g s in the last): no saturation finding is due, and none was named",
				windows, worstP99(rep))
		}
		if f == nil {
			t.Fatal("KS-CP-SATURATED not reported")
		}
		if !strings.Contains(f.Summary, "node agent") || !strings.Contains(f.Summary, " on "+lab.ControlPlaneNodeName) ||
			!(strings.Contains(f.Summary, "kube-apiserver") || strings.Contains(f.Summary, "etcd")) {
			t.Errorf("KS-CP-SATURATED does not name the component and its tier: %s", f.Summary)
		}
		r := rep.Result(cpusage.Name)
		if r == nil {
			t.Fatal("no controlplane.usage")
		}
		return f, r
	}
	// limited: kube-apiserver and etcd are said to be under the limit of cgroup (a path's suffix) of cores.
	limited := func(t *testing.T, r *result.Result, cgroup string, cores float64) {
		t.Helper()
		if c := r.Metric(cpusage.MetricCoresAvailable, nil); c == nil || c.Value > cores*1.01 || !strings.Contains(c.Labels["source"], "CPU limit") {
			t.Errorf("cores available %+v, want the %g-core limit kube-apiserver and etcd share, from the node agent", c, cores)
		}
		for _, comp := range []string{cpusage.APIServer, cpusage.Etcd} {
			m := r.Metric(cpusage.MetricComponentCoresAvailable, map[string]string{"component": comp})
			if m == nil || m.Value > cores*1.01 || !strings.Contains(m.Labels["basis"], cgroup) {
				t.Errorf("%s's cores available %+v, want the %g-core limit of its cgroup %s", comp, m, cores, cgroup)
			}
		}
	}

	t.Run("foreign-cpu-cgroup", func(t *testing.T) {
		// A quarter of small-control-plane's storm: with 128 clients on a busy machine, the apiserver under
		// 0.1 core left the node agent uncreated for minutes. Under this case's smaller cap (foreignCores) the
		// 32 make the API miss its SLO surely in the first window, the agent still up within seconds.
		if err := lab.StartLabProcess(d, "storm-conflict", []string{cfg.AgentBinary, "lab", "storm", "conflicts", "--kubeconfig", d.AdminKubeconfig(),
			"--clients", "32", "--blocks", "4", "--qps", "20", "--user-agent", scenario.ConflictStormUserAgent, "--duration", "30m"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := get(t, "conflict-storm").Stop(context.WithoutCancel(ctx), d, &cfg, stamped(t)); err != nil {
				t.Error(err)
			}
		})
		// The storm's clients race before the confinement: 200 409s answered by the apiserver at full speed
		// (the case's start took 3 s so; 13 s with the wait under 0.1 core). Its 32 clients fill the confined
		// apiserver's queue within a second of the move, before the window's first figures: the runs of
		// 2026-11-29 19:48 and 20:01 (0.1 core) answered 1,544-1,627 409s a minute in their first window
		// (1,291-1,840 when the wait was under the confinement) and missed the SLO in it (p99 1.09-1.41 s), as
		// before; at 0.06 core (foreignCores) four runs (23:13-23:59) answered 832-1,042 a minute at p99
		// 1.38-2.56 s (1.4-2.6x the SLO) in their first window.
		waitRequests(ctx, t, rc, "200 409s", 200, func(l map[string]string) bool { return l["code"] == "409" })
		cg := foreignCPUCgroup(t, d, foreignCores)
		// Once the window is over the storm is paused (SIGSTOP; the cap stays: the node agent reads the cgroup's
		// limit at the window's end, which limited checks): the reads at the window's end and the run's end,
		// through the apiserver under its 0.06 core, no longer queue behind 32 racing clients (they took 40 s,
		// 2026-11-30). Another window resumes it first (SIGCONT); the case's end stops it (Stop continues a
		// paused process).
		storm, err := host.Records{Dir: d.ProcDir(), Logs: d.LogDir()}.Read("storm-conflict")
		if err != nil {
			t.Fatal(err)
		}
		_, r := saturated(t, func() func() {
			if err := storm.Signal(unix.SIGSTOP); err != nil {
				t.Logf("pausing the storm: %v (it runs to the case's end)", err)
				return nil
			}
			stamped(t)("the window over: the storm (pid %d) paused for the reads and the run's end", storm.PID)
			return func() {
				if err := storm.Signal(unix.SIGCONT); err != nil {
					t.Fatal(err)
				}
			}
		})
		limited(t, r, cg, foreignCores)
	})

	// control-plane-hog: a pod with no limit spinning on every core of the control-plane node, beside
	// kube-apiserver and etcd (no limit either) under the conflict storm. The starvation is named from the node
	// tier where a component's run-queue wait crosses KS-CP-SATURATED's threshold (KS-CP-SATURATED, naming a
	// component that lost at least 0.1 s per second, not one idle on a few milliseconds), else by kube-apiserver's own
	// goroutines' wait (KS-CP-SATURATED-API) with the node agent's figures of where its CPU went: runs here put
	// the share of their runnable time kube-apiserver and etcd waited at 78-90%, around that threshold.
	// starvedBy starts a scenario that starves the control plane from beside it on its node and checks that the
	// node tier names the starved component as the cause (only: the measurements run). Where the API kept its
	// SLO in all three windows, no saturation finding is due and none may be named: the fault was too weak on
	// this machine to exercise the rule, so the case is skipped with that reason unless mustMiss says the
	// scenario always breaks the SLO (then it fails).
	starvedBy := func(t *testing.T, name string, mustMiss bool, ease func() (restore func()), only ...string) *result.Report {
		sc := get(t, name)
		start1(t, sc)
		// The fault in effect, as a user meets it (a neighbour that has run for a while): the lab's kernel, the
		// control-plane node's, under CPU pressure (PSI some avg60, read here on the host the lab's nodes share)
		// before kubeslow starts. The node agent, slow to start on a starved node, reads that same minute as the
		// starvation's reach before its window (runner.PressureLookback), which orders the outages the
		// availability probes see under it: the cases that must break the SLO (mustMiss) wait for it; the hog's
		// run has no availability probes and takes its window as it comes (its wait cost 45 s). The pressure
		// builds while the storm does: the two waits run at once, each logged with its time.
		type reading struct {
			avg60 float64
			took  time.Duration
			err   error
		}
		var psi chan reading
		if mustMiss {
			psi = make(chan reading, 1)
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			go func() {
				began := time.Now()
				avg60, err := psiEstablished(wctx, 0.6)
				psi <- reading{avg60, time.Since(began), err}
			}()
		}
		window, end := cpuRuns(t, ease, only...)
		defer end()
		began := time.Now()
		waitRequests(ctx, t, rc, "200 409s", 200, func(l map[string]string) bool { return l["code"] == "409" })
		t.Logf("[%6.1fs] 200 409s answered in %s", time.Since(start).Seconds(), time.Since(began).Round(100*time.Millisecond))
		if psi != nil {
			p := <-psi
			if p.err != nil {
				t.Fatal(p.err)
			}
			t.Logf("[%6.1fs] CPU pressure established in %s: PSI some avg60 %.0f%%", time.Since(start).Seconds(),
				p.took.Round(100*time.Millisecond), p.avg60*100)
		}
		rep, got := window()
		// KS-CP-SATURATED(-API) is saturation *and* an SLO missed: in a window where the hog left the API
		// within its SLO (no KS-API-LATENCY) no saturation finding may fire, and none is wanted (CI's run of
		// 2026-11-28: etcd starved, API p99 within 1 s). Such a window is measured again, twice at most, where
		// the scenario must miss the SLO, or where its p99 was not measured (mayMissNext with hogNearSLO: the hog,
		// the one such case that may keep it, never missed it after a window that kept it); an API that missed
		// its SLO with no saturation finding fails at once.
		windows := 1
		for ; windows < 3 && got["KS-CP-SATURATED"] == nil && got["KS-CP-SATURATED-API"] == nil && got["KS-API-LATENCY"] == nil &&
			(mustMiss || mayMissNext(rep, hogNearSLO)); windows++ {
			t.Logf("%s left the API within its SLO in this window (no KS-API-LATENCY; p99 %.3g s): measuring again (run %d of 3)", name, worstP99(rep), windows+1)
			rep, got = window()
		}
		// The node tier names the starved component: in KS-CP-SATURATED's text when a component's run-queue
		// wait is its figure (any of the four that lost at least 0.1 s per second: the hog starves them all;
		// kube-apiserver and etcd were named in the runs here), else in KS-CP-SATURATED-API's (on its own, or
		// under KS-CP-SATURATED when the window's figure was the higher: CI's run of 2026-11-26) with the node
		// agent's figures of where kube-apiserver's CPU went.
		f, api := got["KS-CP-SATURATED"], got["KS-CP-SATURATED-API"]
		if f == nil && api == nil && got["KS-API-LATENCY"] == nil && !mustMiss {
			// CI's run of 2026-11-29: the hog's pod left the API's p99 within 1 s in three windows (9-11 k 409s
			// a minute answered; 0.51-0.59 s on the lab that day); control-plane-neighbour, which does break the
			// SLO, asserts the naming.
			t.Skipf("%s left the API within its SLO in %d window(s) on this machine (p99 %.3g s in the last): no saturation finding is due, and none was named",
				name, windows, worstP99(rep))
		}
		if f == nil && api == nil {
			t.Fatal("neither KS-CP-SATURATED nor KS-CP-SATURATED-API reported")
		}
		byComponent := false
		for _, comp := range []string{cpusage.APIServer, cpusage.Etcd, "kube-controller-manager", "kube-scheduler"} {
			byComponent = byComponent || f != nil && strings.Contains(f.Summary, "component's run-queue wait (node agent): "+comp+" on "+lab.ControlPlaneNodeName) &&
				strings.Contains(f.Summary, "starved by its neighbours")
		}
		byAPI := api != nil && strings.Contains(api.Summary, "the node agent on "+lab.ControlPlaneNodeName) && strings.Contains(api.Summary, "its neighbours on the node took the CPU")
		if !byComponent && !byAPI {
			t.Errorf("no finding names the starved component from the node agent: KS-CP-SATURATED %+v, KS-CP-SATURATED-API %+v", f, api)
		}
		return rep
	}

	// control-plane-hog: a pod with no limit spinning on every core of the control-plane node, beside
	// kube-apiserver and etcd (no limit either) under the conflict storm. The starvation is named from the node
	// tier where a component's run-queue wait crosses KS-CP-SATURATED's threshold (KS-CP-SATURATED, naming a
	// component that lost at least 0.1 s per second, not one idle on a few milliseconds), else by kube-apiserver's own
	// goroutines' wait (KS-CP-SATURATED-API) with the node agent's figures of where its CPU went: runs here put
	// the share of their runnable time kube-apiserver and etcd waited at 78-90%, around that threshold.
	t.Run("control-plane-hog", func(t *testing.T) {
		// Once the window is over the hog's pod gets the least CPU weight (the kubelet sets a pod's cgroup when
		// it creates it): the reads at the window's end and the run's end no longer wait on the starved
		// control plane (its reads took ~20 s, 2026-11-30). Another window gives it its weight back.
		ease := lowerWeight(t, "the hog pod", func() (string, error) { return hogPodCgroup(ctx, c) }, nil)
		starvedBy(t, "control-plane-hog", false, ease, "api.responsiveness", cpusage.Name)
	})

	// control-plane-neighbour, a second mechanism: no pod at all, a host process in a cgroup beside kubepods
	// weighted three times kubepods, spinning on every core (issue 43's "a heavy neighbour beside the control
	// plane's pods", as a backup agent or a scanner run by the node's init system would be). Nothing in the
	// cluster shows it; the node tier's run-queue wait names the starvation, as the cause: at warning or above,
	// explained by nothing, with the outages, stalls and API latency of the same window (the availability
	// probes run too) folded under it.
	t.Run("control-plane-neighbour", func(t *testing.T) {
		// Once the window is over the neighbour's cgroup gets the least CPU weight (it spins on what kubepods
		// leaves): the reads at the window's end (the counters the window ran up), the node agent's and the
		// namespace's deletion no longer crawl. Another window gives it its weight back, and the pressure its
		// minute again.
		ease := lowerWeight(t, "the neighbour", neighbourCgroup, func() {
			if _, err := psiEstablished(ctx, 0.6); err != nil {
				t.Fatal(err)
			}
		})
		rep := starvedBy(t, "control-plane-neighbour", true, ease, "api.responsiveness", cpusage.Name, availability.Name)
		// Where each result's window lay against the outages: what the ordering of causes rests on.
		for _, r := range rep.Results {
			t.Logf("%s: %s to %s", r.Name, r.Start.Format("15:04:05.0"), r.End.Format("15:04:05.0"))
			if r.Name == availability.Name {
				for _, w := range availability.Outages(r) {
					t.Logf("  outage %s", w.Describe())
				}
			}
		}
		causes := 0
		for _, f := range rep.Findings {
			switch f.ID {
			case "KS-CP-SATURATED", "KS-CP-SATURATED-API":
				if f.ExplainedBy == "" {
					causes++
					if f.Severity.Rank() < result.SeverityWarning.Rank() {
						t.Errorf("%s, the cause, at %s: want warning or error", f.ID, f.Severity)
					}
				}
			case "KS-ETCD-STALL", "KS-APISERVER-UNREACHABLE", "KS-API-LATENCY":
				if f.ExplainedBy != "KS-CP-SATURATED" && f.ExplainedBy != "KS-CP-SATURATED-API" {
					t.Errorf("%s is not folded under the starvation (explained by %q): %s", f.ID, f.ExplainedBy, f.Summary)
				}
			}
		}
		if causes == 0 {
			t.Error("the starvation is reported only under another cause")
		}
	})

	// The static pods' processes are not lab records: check them gone too.
	var static []labtest.Process
	for _, comp := range []string{lab.Etcd, lab.KubeAPIServer, lab.KubeControllerMgr, lab.KubeScheduler} {
		pid, err := lab.ControlPlanePID(d, comp)
		if err != nil {
			t.Fatal(err)
		}
		static = append(static, labtest.Process{Name: comp, PID: pid, StartTick: startTick(t, pid)})
	}
	downed = true
	down()
	labtest.AssertGone(t, d, static)
}

// kubeadmLayout checks the kubeadm layout's shape (see TestIntegrationKubeadm).
func kubeadmLayout(ctx context.Context, t *testing.T, d lab.Dirs, rc *rest.Config, c kubernetes.Interface) {
	node, err := c.CoreV1().Nodes().Get(ctx, lab.ControlPlaneNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("control-plane node: %v", err)
	}
	if v, ok := node.Labels[lab.ControlPlaneRoleLabel]; !ok || v != "" {
		t.Errorf("node %s labels %v: want %s=\"\"", node.Name, node.Labels, lab.ControlPlaneRoleLabel)
	}
	tainted := false
	for _, tn := range node.Spec.Taints {
		tainted = tainted || (tn.Key == lab.ControlPlaneRoleLabel && tn.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tainted {
		t.Errorf("node %s taints %v: want %s:NoSchedule", node.Name, node.Spec.Taints, lab.ControlPlaneRoleLabel)
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
	}
	if !ready || node.Status.NodeInfo.ContainerRuntimeVersion == "" {
		t.Errorf("node %s not Ready (%v) or no runtime (%q)", node.Name, node.Status.Conditions, node.Status.NodeInfo.ContainerRuntimeVersion)
	}

	pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "tier=control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	byComponent := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		byComponent[p.Labels["component"]] = p
	}
	for _, comp := range []string{lab.Etcd, lab.KubeAPIServer, lab.KubeControllerMgr, lab.KubeScheduler} {
		p, ok := byComponent[comp]
		switch {
		case !ok:
			t.Errorf("no mirror pod with component=%s,tier=control-plane in kube-system (have %d)", comp, len(pods.Items))
		case p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != lab.ControlPlaneNodeName || !p.Spec.HostNetwork:
			t.Errorf("mirror pod %s: phase %s, node %q, hostNetwork %v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.HostNetwork)
		case p.Annotations[corev1.MirrorPodAnnotationKey] == "":
			t.Errorf("pod %s is not a mirror pod (annotations %v)", p.Name, p.Annotations)
		}
	}

	inNS := func(url string) (string, error) {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", lab.NetNS, "curl", "-skf", "--max-time", "5", url).CombinedOutput()
		return string(out), err
	}
	metrics, err := inNS(fmt.Sprintf("http://127.0.0.1:%d/metrics", lab.EtcdMetricsPort))
	if err != nil || !strings.Contains(metrics, "etcd_server_has_leader 1") || !strings.Contains(metrics, "etcd_disk_wal_fsync_duration_seconds_bucket") {
		t.Errorf("etcd metrics on 127.0.0.1:%d inside %s: %v (%d bytes, has_leader/wal_fsync missing)", lab.EtcdMetricsPort, lab.NetNS, err, len(metrics))
	}
	for _, port := range []int{lab.KubeControllerManagerPort, lab.KubeSchedulerPort} {
		if out, err := inNS(fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil || strings.TrimSpace(out) != "ok" {
			t.Errorf("127.0.0.1:%d/healthz inside %s: %v %q", port, lab.NetNS, err, out)
		}
	}
	// Bound to 127.0.0.1: the node's address does not answer on those ports.
	for _, port := range []int{lab.EtcdMetricsPort, lab.KubeControllerManagerPort, lab.KubeSchedulerPort} {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", lab.ControlPlaneIP, port), 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("%s:%d answers from the host: want it bound to 127.0.0.1 only", lab.ControlPlaneIP, port)
		}
	}

	// The apiserver's process, found through the control-plane node's pod cgroups, names the audit log.
	pid, err := lab.ControlPlanePID(d, lab.KubeAPIServer)
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "--audit-log-path="+d.AuditLog()) {
		t.Fatalf("kube-apiserver (pid %d) cmdline %q: want --audit-log-path=%s (%v)", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), d.AuditLog(), err)
	}
	fi, err := os.Stat(d.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	before := fi.Size()
	for i := 0; i < 5; i++ {
		if _, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labtest.Eventually(ctx, t, "audit log grows", func() error {
		fi, err := os.Stat(d.AuditLog())
		if err != nil {
			return err
		}
		if fi.Size() <= before {
			return fmt.Errorf("audit log %d bytes, was %d", fi.Size(), before)
		}
		return nil
	})

	st, err := lab.GetStatus(ctx, d)
	if err != nil || st.Layout != lab.LayoutKubeadm || st.Manifests != lab.ManifestsDir(d) || !st.Up {
		t.Errorf("lab status: layout %q manifests %q up %v (%v)", st.Layout, st.Manifests, st.Up, err)
	}
	staticShown := 0
	for _, cs := range st.Components {
		if strings.HasSuffix(cs.Name, " (static pod)") && cs.Running && cs.PID > 0 && cs.Log != "" {
			staticShown++
		}
	}
	if staticShown != 4 {
		t.Errorf("lab status shows %d running static pods with a PID and a log, want 4: %+v", staticShown, st.Components)
	}

	// The node tier: the agent on lab-control-plane finds the four components, scrapes etcd and the scheduler
	// and streams the audit log; the worker's agent claims none of them.
	cpnodetest.Check(t, rc, lab.AgentImage, lab.RealNodeName(1))
}

func get(t *testing.T, name string) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// memoryBlockDevice is a block device in memory with an ext4 filesystem (no journal), removed when the test
// ends (after `lab down`, which unmounts it): a zram device of its own where the zram module is loaded, whose
// I/O runs in the writer's own context; else a loop device over /dev/shm, whose I/O waits for the loop's kernel
// worker. On the 2-core machine at 99% CPU pressure from other work, 1,500 fdatasyncs of 4 KiB had p99 2.2 ms
// on zram without a journal (5.2 ms with one) against 13.6-14.9 ms on the loop device; etcd on that loop
// device (with a journal) measured WAL fsync p99 27 ms, over etcd's 10 ms, on a lab meant to be healthy.
func memoryBlockDevice(ctx context.Context, t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/sys/class/zram-control/hot_add") // reading it adds a device and says its number
	if err != nil {
		t.Logf("no zram (%v): etcd on a loop device over /dev/shm", err)
		return memoryLoopDevice(ctx, t)
	}
	n := strings.TrimSpace(string(b))
	dev := "/dev/zram" + n
	t.Cleanup(func() {
		if err := os.WriteFile("/sys/class/zram-control/hot_remove", []byte(n), 0o200); err != nil {
			t.Errorf("removing %s: %v", dev, err)
		}
	})
	if err := os.WriteFile("/sys/block/zram"+n+"/disksize", []byte("1G"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-O", "^has_journal", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v %s", dev, err, out)
	}
	return dev
}

// memoryLoopDevice is a loop device with an ext4 filesystem over a file in /dev/shm, detached and removed
// when the test ends.
func memoryLoopDevice(ctx context.Context, t *testing.T) string {
	t.Helper()
	f, err := os.CreateTemp("/dev/shm", "kubeslow-etcd-*.img")
	if err != nil {
		t.Fatal(err)
	}
	img := f.Name()
	t.Cleanup(func() { _ = os.Remove(img) })
	err = f.Truncate(1 << 30)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup %s: %v", img, err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v %s", dev, err, out)
		}
	})
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-O", "^has_journal", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v %s", dev, err, out)
	}
	return dev
}

// foreignCPUCgroup moves kube-apiserver and etcd into a CPU cgroup of the test's own (outside the lab's tree,
// as a tester or another tool would make it) capped at cores, and puts them back when the test ends. It
// returns the cgroup's path in its hierarchy. cgroup v2's cpu.max where the cpu controller is on the unified
// hierarchy, else v1's CFS quota.
func foreignCPUCgroup(t *testing.T, d lab.Dirs, cores float64) string {
	t.Helper()
	name := fmt.Sprintf("kubeslow-test-confined-%d", os.Getpid())
	root, v1 := cpuRoot()
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pids := map[int]string{} // each process's cgroup before
	t.Cleanup(func() {
		for pid, home := range pids {
			if err := os.WriteFile(filepath.Join(root, home, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				t.Errorf("moving pid %d back to %s: %v", pid, home, err)
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	file := "cpu.max"
	if v1 {
		file = "cpu.cfs_quota_us"
		if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte("100000"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quota := strconv.Itoa(int(cores * 100000))
	if !v1 {
		quota += " 100000"
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(quota), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, comp := range []string{lab.KubeAPIServer, lab.Etcd} {
		pid, err := lab.ControlPlanePID(d, comp)
		if err != nil {
			t.Fatal(err)
		}
		home, err := cgroupOf(pid, v1)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatalf("moving %s (pid %d) into %s: %v", comp, pid, dir, err)
		}
		pids[pid] = home
		t.Logf("%s (pid %d) moved from %s into %s (%s: %g cores)", comp, pid, home, dir, file, cores)
	}
	return "/" + name
}

// cpuRoot is the hierarchy of the CPU controller: the unified one where it offers cpu, else v1's cpu (v1 true).
func cpuRoot() (root string, v1 bool) {
	for _, r := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if b, err := os.ReadFile(filepath.Join(r, "cgroup.controllers")); err == nil && strings.Contains(" "+string(b)+" ", " cpu ") {
			return r, false
		}
	}
	return "/sys/fs/cgroup/cpu", true
}

// neighbourCgroup is the CPU cgroup directory of control-plane-neighbour (beside the control-plane node's
// kubepods).
func neighbourCgroup() (string, error) {
	root, _ := cpuRoot()
	return filepath.Join(root, lab.ControlPlaneNodeCgroup(), scenario.NeighbourCgroup), nil
}

// hogPodCgroup is the CPU cgroup directory of control-plane-hog's pod on the control-plane node (the kubelet's
// cgroupfs layout under its --cgroup-root: kubepods/<qos>/pod<uid>).
func hogPodCgroup(ctx context.Context, c kubernetes.Interface) (string, error) {
	pod, err := c.CoreV1().Pods(scenario.HogNamespace).Get(ctx, scenario.HogPod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	root, _ := cpuRoot()
	base := filepath.Join(root, lab.ControlPlaneNodeCgroup(), "kubepods")
	for _, name := range []string{"pod" + string(pod.UID), "pod" + strings.ReplaceAll(string(pod.UID), "-", "_")} {
		for _, dir := range []string{filepath.Join(base, name), filepath.Join(base, "burstable", name), filepath.Join(base, "besteffort", name)} {
			if _, err := os.Stat(dir); err == nil {
				return dir, nil
			}
		}
	}
	return "", fmt.Errorf("no cgroup of pod %s (uid %s) under %s", scenario.HogPod, pod.UID, base)
}

// cpuWeight sets the CPU weight of the cgroup dir to w (0: the least the controller takes) and returns the
// weight it had: cgroup v2's cpu.weight, else v1's cpu.shares.
func cpuWeight(dir string, w int) (int, error) {
	_, v1 := cpuRoot()
	file := filepath.Join(dir, "cpu.weight")
	if v1 {
		file = filepath.Join(dir, "cpu.shares")
	}
	if w <= 0 && v1 {
		w = 2
	} else if w <= 0 {
		w = 1
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	had, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %q", file, b)
	}
	return had, os.WriteFile(file, []byte(strconv.Itoa(w)), 0o644)
}

// cgroupOf is pid's cgroup in the v1 cpu hierarchy (v1) or the unified one.
func cgroupOf(pid int, v1 bool) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v1 && (parts[1] == "cpu" || strings.HasPrefix(parts[1], "cpu,") || strings.Contains(parts[1], ",cpu,") || strings.HasSuffix(parts[1], ",cpu")) ||
			!v1 && parts[1] == "" {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("pid %d: no cpu cgroup in %q", pid, b)
}

// psiEstablished waits (3 minutes at most) until the host's CPU pressure (PSI some avg60) is at least share.
// It returns the reading that reached it (a share), or fails with the last one; it logs nothing, so that it may
// run beside another wait.
func psiEstablished(ctx context.Context, share float64) (float64, error) {
	var last hostfs.PSI
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		some, _, err := hostfs.Host().Pressure("cpu")
		last = some
		return err == nil && some.Avg60/100 >= share, err
	})
	if err != nil {
		return 0, fmt.Errorf("CPU pressure (PSI some avg60) not at %.0f%% within 3 minutes (last %.0f%%): %w", share*100, last.Avg60, err)
	}
	return last.Avg60 / 100, nil
}

// waitRequests waits until the apiserver has answered at least n more requests (from its first answer here)
// whose apiserver_request_total labels match: a scenario's load has built up.
func waitRequests(ctx context.Context, t *testing.T, rc *rest.Config, what string, n float64, match func(map[string]string) bool) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	base, got := -1.0, 0.0
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // a starved apiserver may not answer: ask again
		}
		snap, err := prom.Parse(bytes.NewReader(body), time.Now())
		if err != nil {
			return false, err
		}
		sum := 0.0
		for _, s := range snap.Series("apiserver_request_total") {
			if match(s.Labels) {
				sum += s.Value
			}
		}
		if base < 0 {
			base = sum // the counts of the cases before
		}
		got = sum - base
		return got >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s more (have %g): %v", what, got, err)
	}
}

// startTick is field 22 of /proc/<pid>/stat (the process's start time), which tells a process from a later
// one that reuses its PID.
func startTick(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var tick uint64
	if _, err := fmt.Sscan(f[19], &tick); err != nil {
		t.Fatal(err)
	}
	return tick
}

// The windows of the cases whose evidence holds in less than the default 20 s (see run in
// TestIntegrationKubeadm): each case logs the margins its window left.
const (
	listStormWindow = 10 * time.Second
	etcdDiskWindow  = 12 * time.Second
)

// foreignCores is the cap of foreign-cpu-cgroup's cgroup: 0.6 of small-control-plane's
// (scenario.SmallControlPlaneCores), whose 0.1 core under the case's 32 clients left the API's p99 from 0.885 s
// (three windows of CI's run of 2026-11-29 at 0.946-0.954 s, then a skip: 104 s) to 1.41 s. Its clients are
// closed loops: a request waits about as long as the others take the CPU before it, so p99 grows as the cap
// shrinks: 1.38-2.56 s in the first window of four runs at 0.06 (the case 36-43 s, its node agent up in
// seconds), against 0.885-1.41 s at 0.1. A window that still kept the SLO near it is measured again (nearSLO).
const foreignCores = 0.06

// nearSLO is the share of the API's SLO (apislo.SLOSingle) a CPU case's window must reach, in its worst p99,
// for the case to measure another window when the API kept its SLO: window to window, one case's p99 moved by
// 18-30% on the lab (2026-11-29: foreign-cpu-cgroup 0.885 s, then 1.15 s and the SLO missed; control-plane-hog
// 0.505, 0.561, 0.594 s). A window at half the SLO does not miss it in the next; three of them cost ~100 s.
//
// hogNearSLO is control-plane-hog's: the whole SLO, so that only a window whose p99 was not measured is measured
// again. Its p99 rose by 18% at most over two windows (0.505 to 0.594 s above) and fell in every other run that
// measured again (0.962, 0.768, 0.607 s; 0.76, 0.564 s on 2026-11-29; 0.974 then 0.745 s on 2026-11-30), never
// missing the SLO after a window that kept it: each window it measured again (~43 s) ended in the same skip.
const (
	nearSLO    = 0.7
	hogNearSLO = 1.0
)

// mayMissNext reports whether the next window may miss the SLO that rep's kept: its worst p99 reached near of
// it, or was not measured (the apiserver's /metrics unanswered).
func mayMissNext(rep *result.Report, near float64) bool {
	p := worstP99(rep)
	return p == 0 || p >= near*apislo.SLOSingle
}

// worstP99 is the highest p99 of single-object and mutating calls in rep's results (0 when none was measured).
func worstP99(rep *result.Report) float64 {
	worst := 0.0
	for _, r := range rep.Results {
		for _, m := range r.Metrics {
			if m.Name == apislo.MetricLatencyP99Single {
				worst = max(worst, m.Value)
			}
		}
	}
	return worst
}
