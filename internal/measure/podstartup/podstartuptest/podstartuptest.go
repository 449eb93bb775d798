// Package podstartuptest is pods.startup's analysis of scripted start-up runs: the fixtures of its rules,
// and the pod side of the combined rules' fixtures.
package podstartuptest

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Run scripts a start-up run: N pods created every Gap seconds, each with its phases (seconds) from Ph.
type Run struct {
	N       int
	Gap     float64
	Creator string
	QPS     float64
	Ph      func(i int) (node string, schedule, sandbox, start, observe float64)
	Stuck   int
}

// Result is podstartup.Analyze over the run's timelines.
func (p Run) Result() result.Result {
	at := func(s float64) time.Time { return ruletest.T0.Add(time.Duration(s * float64(time.Second))) }
	var ts []podstartup.Timeline
	var lat []time.Duration
	for i := range p.N {
		node, s, sb, st, obs := p.Ph(i)
		c := float64(i) * p.Gap
		created := at(c)
		ts = append(ts, podstartup.Timeline{Name: fmt.Sprintf("p%d", i), Node: node,
			Created: created.Truncate(time.Second), SeenCreated: created.Add(2 * time.Millisecond),
			SeenScheduled: at(c + s), Scheduled: at(c + s).Truncate(time.Second),
			SandboxReady: at(c + s + sb).Truncate(time.Second), Started: at(c + s + sb + st).Truncate(time.Second),
			SeenRunning: at(c + s + sb + st + obs)})
		lat = append(lat, 30*time.Millisecond)
	}
	for i := range p.Stuck {
		ts = append(ts, podstartup.Timeline{Name: fmt.Sprintf("stuck%d", i), SeenCreated: at(float64(p.N) * p.Gap),
			LastEvent: "FailedScheduling: 0/4 nodes are available: 4 Insufficient cpu"})
	}
	in := podstartup.Input{Timelines: ts, Creator: p.Creator, RequestedQPS: p.QPS, Expected: p.N + p.Stuck}
	if p.Creator == "client" {
		in.CreateLatency, in.ClientWait = lat, 200*time.Millisecond
	}
	return podstartup.Analyze(in)
}

// Even spreads pods over four nodes, every phase fast.
func Even(i int) (string, float64, float64, float64, float64) {
	return fmt.Sprintf("n%d", i%4), 0.1, 0.3, 0.2, 0.05
}

// Healthy is a healthy run.
var Healthy = Run{N: 120, Gap: 0.05, Creator: "client", QPS: 20, Ph: Even}

// SlowSandboxNode: one node of four has a slow CNI (case E's sandbox phase).
var SlowSandboxNode = Run{N: 120, Gap: 0.05, Creator: "client", QPS: 20, Ph: func(i int) (string, float64, float64, float64, float64) {
	node, s, sb, st, obs := Even(i)
	if node == "n2" {
		sb = 3.2
	}
	return node, s, sb, st, obs
}}

// SlowScheduler binds 5 pods a second.
var SlowScheduler = Run{N: 100, Gap: 0.01, Creator: "client", QPS: 100, Ph: func(i int) (string, float64, float64, float64, float64) {
	node, _, sb, st, obs := Even(i)
	return node, float64(i) / 5, sb, st, obs
}}

func pods(p Run) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, p.Result()) }
}

// RuleFixtures are podstartup.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-POD-SLO":    {Fire: pods(SlowScheduler), Clear: pods(SlowSandboxNode)},
		"KS-POD-PHASE":  {Fire: pods(SlowScheduler), Clear: pods(Healthy)},
		"KS-POD-NODE":   {Fire: pods(SlowSandboxNode), Clear: pods(SlowScheduler)}, // every node slow alike is not one slow node
		"KS-POD-RATE":   {Fire: pods(Run{N: 150, Gap: 0.05, Creator: "controller", Ph: Even}), Clear: pods(Run{N: 150, Gap: 0.01, Creator: "controller", Ph: Even})},
		"KS-POD-CREATE": {Fire: pods(Run{N: 120, Gap: 0.1, Creator: "client", QPS: 20, Ph: Even}), Clear: pods(Healthy)},
		"KS-POD-STUCK":  {Fire: pods(Run{N: 50, Gap: 0.05, Creator: "client", QPS: 20, Ph: Even, Stuck: 3}), Clear: pods(Healthy)},
	}
}
