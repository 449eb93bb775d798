// Package podrestest is pods.resources' scripted inputs (cAdvisor scrapes in the exposition format, pods as
// the API returns them, the node agent's kernel kills) and the recordings made on the lab
// (TestIntegrationPodResources with KUBESLOW_RECORD_PODRES): the fixtures of its rules.
package podrestest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// CG is one pod cgroup's cAdvisor counters at a scrape (container "": the pod's own, as the lab's kubelets
// show it); Quota in microseconds per 100 ms period (0: no CPU limit).
type CG struct {
	NS, Pod                                string
	Periods, Throttled, Usage, Quota, Peak float64
}

// Scrape is a cAdvisor scrape of the cgroups at a time, in the exposition format cAdvisor writes.
func Scrape(t testing.TB, at time.Time, cgs ...CG) *prom.Snapshot {
	t.Helper()
	var b bytes.Buffer
	for _, f := range []string{"container_cpu_cfs_periods_total", "container_cpu_cfs_throttled_periods_total", "container_cpu_usage_seconds_total"} {
		fmt.Fprintf(&b, "# TYPE %s counter\n", f)
	}
	for _, c := range cgs {
		l := fmt.Sprintf(`{container="",namespace=%q,pod=%q}`, c.NS, c.Pod)
		if c.Quota > 0 {
			fmt.Fprintf(&b, "container_cpu_cfs_periods_total%s %g\ncontainer_cpu_cfs_throttled_periods_total%s %g\n", l, c.Periods, l, c.Throttled)
			fmt.Fprintf(&b, "container_spec_cpu_quota%s %g\ncontainer_spec_cpu_period%s 100000\n", l, c.Quota, l)
		}
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total%s %g\n", l, c.Usage)
		if c.Peak > 0 {
			fmt.Fprintf(&b, "container_memory_max_usage_bytes%s %g\n", l, c.Peak)
		}
	}
	s, err := prom.Parse(&b, at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Pod is a Running, Ready pod on n1 created an hour before T0, with one container "app" under the limits
// given ("" for none).
func Pod(ns, name, uid, cpu, mem string) corev1.Pod {
	lim := corev1.ResourceList{}
	if cpu != "" {
		lim[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		lim[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(ruletest.T0.Add(-time.Hour))},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: lim}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
}

// OOMPod is Pod in CrashLoopBackOff after 4 restarts, the last one OOMKilled at at.
func OOMPod(name, uid, mem string, at time.Time) corev1.Pod {
	p := Pod("app", name, uid, "", mem)
	p.Status.ContainerStatuses[0].RestartCount = 4
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(at)}
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	return p
}

// Window is the scripted window's length.
const Window = 100 * time.Second

// Input is a window over n1 from T0 with the cgroups' counters at zero at its start and at after at its end,
// and the pods.
func Input(t testing.TB, after []CG, pods []corev1.Pod, events ...corev1.Event) podres.Input {
	var before []CG
	for _, c := range after {
		before = append(before, CG{NS: c.NS, Pod: c.Pod, Quota: c.Quota})
	}
	return podres.Input{First: map[string]*prom.Snapshot{"n1": Scrape(t, ruletest.T0, before...)},
		Last:      map[string]*prom.Snapshot{"n1": Scrape(t, ruletest.T0.Add(Window), after...)},
		PodsStart: pods, PodsEnd: pods, Events: events,
		Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, From: ruletest.T0, To: ruletest.T0.Add(Window)}
}

// Sweep is the node sweep's result on n1 from the kernel log's kills, as the agent reports them.
func Sweep(kills ...agent.OOMKill) result.Result {
	res := nodeagent.Analyze([]agent.NodeHost{{Node: "n1", Kernel: &agent.KernelLog{Source: "/dev/kmsg", Lines: 10, OOMKills: kills}}}, nil)
	res.Start, res.End = ruletest.T0, ruletest.T0.Add(Window)
	return res
}

// Kill is the kernel's kill of a process of pod uid in a memory cgroup oomMemcg ran out, ago seconds before
// the sweep read it, parsed from the kernel's line.
func Kill(uid, oomMemcg string, ago float64) agent.OOMKill {
	k, ok := agent.ParseOOMKillLine("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x,mems_allowed=0,oom_memcg=" + oomMemcg +
		",task_memcg=/kubepods/burstable/pod" + uid + "/" + strings.Repeat("a", 64) + ",task=app,pid=7,uid=0")
	if !ok {
		panic("podrestest: the kill line does not parse")
	}
	k.AgoSeconds, k.Killed = ago, "memcg"
	return k
}

// Report is the report of the results with the run's start at T0.
func Report(rs ...result.Result) *result.Report {
	r := ruletest.Report(nil, rs...)
	r.Start = ruletest.T0
	return r
}

// UIDs of the scripted pods.
const (
	UIDOwn  = "11111111-2222-3333-4444-555555555555"
	UIDNode = "66666666-2222-3333-4444-555555555555"
)

// Recorded is pods.resources' analysis of a recording (testdata/recorded-NAME) and the node sweep's
// result recorded with it, in a report with the run's start.
func Recorded(t *testing.T, name string) *result.Report {
	t.Helper()
	dir := filepath.Join(ruletest.Path("internal/measure/podres/testdata"), "recorded-"+name)
	in, err := podres.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	res := podres.Analyze(in)
	b, err := os.ReadFile(filepath.Join(dir, "node-sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sw struct {
		Start  time.Time     `json:"run_start"`
		Result result.Result `json:"result"`
	}
	if err := json.Unmarshal(b, &sw); err != nil {
		t.Fatal(err)
	}
	r := ruletest.Report(nil, res, sw.Result)
	r.Start = sw.Start
	return r
}

// RuleFixtures are the rules' fixtures: the lab's recordings (TestIntegrationPodResources) — "faults" (a
// busy loop under 100m, four threads under 50m failing their readiness probe, a container allocating 256 MiB
// under a 64 MiB limit, a pod without a limit allocating past the node's capped memory) fires all three, and
// "healthy" (one idle pod without limits, the node agent and CoreDNS) clears them.
func RuleFixtures() map[string]ruletest.Fixture {
	rec := func(name string) func(t *testing.T) *result.Report {
		return func(t *testing.T) *result.Report { return Recorded(t, name) }
	}
	f := ruletest.Fixture{Fire: rec("faults"), Clear: rec("healthy")}
	return map[string]ruletest.Fixture{"KS-POD-THROTTLED": f, "KS-POD-OOMKILLED": f, "KS-NODE-OOM": f}
}
