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
	// StuckEvent is the Warning event (reason, message) on each stuck pod; the scheduler's "Insufficient cpu"
	// by default.
	StuckEvent [2]string
	// Events are the Events (reason, message) on running pod i.
	Events func(i int) [][2]string
	// Pause holds creation back Pause seconds from pod PauseAt on (a stall of the apiserver mid-burst).
	Pause   float64
	PauseAt int
}

// Event is a pod's Event as the collector records it, created at created+at seconds and recurring n times
// a second apart.
func Event(uid string, created time.Time, at float64, n int, reason, msg string) (podstartup.PodEvent, bool) {
	c, ok := podstartup.ClassifyEvent(reason, msg)
	first := created.Add(time.Duration(at * float64(time.Second)))
	return podstartup.PodEvent{UID: uid, Class: c, Count: n, First: first, Last: first.Add(time.Duration(n-1) * time.Second), Message: msg}, ok
}

// Result is podstartup.Analyze over the run's timelines.
func (p Run) Result() result.Result {
	at := func(s float64) time.Time { return ruletest.T0.Add(time.Duration(s * float64(time.Second))) }
	var ts []podstartup.Timeline
	var lat []time.Duration
	for i := range p.N {
		node, s, sb, st, obs := p.Ph(i)
		c := float64(i) * p.Gap
		if p.Pause > 0 && i >= p.PauseAt {
			c += p.Pause
		}
		created := at(c)
		ts = append(ts, podstartup.Timeline{Name: fmt.Sprintf("p%d", i), Node: node,
			Created: created.Truncate(time.Second), SeenCreated: created.Add(2 * time.Millisecond),
			SeenScheduled: at(c + s), Scheduled: at(c + s).Truncate(time.Second),
			SandboxReady: at(c + s + sb).Truncate(time.Second), Started: at(c + s + sb + st).Truncate(time.Second),
			SeenRunning: at(c + s + sb + st + obs)})
		if p.Events != nil {
			for j, e := range p.Events(i) {
				if pe, ok := Event(fmt.Sprintf("p%d-%d", i, j), created, 0.5, 2, e[0], e[1]); ok {
					ts[len(ts)-1].Events = append(ts[len(ts)-1].Events, pe)
				}
			}
		}
		lat = append(lat, 30*time.Millisecond)
	}
	stuck := p.StuckEvent
	if stuck[0] == "" {
		stuck = [2]string{"FailedScheduling", "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."}
	}
	for i := range p.Stuck {
		created := at(float64(p.N) * p.Gap)
		t := podstartup.Timeline{Name: fmt.Sprintf("stuck%d", i), SeenCreated: created, LastEvent: stuck[0] + ": " + stuck[1]}
		if pe, ok := Event(fmt.Sprintf("stuck%d", i), created, 0.1, 5, stuck[0], stuck[1]); ok {
			t.Events = append(t.Events, pe)
		}
		ts = append(ts, t)
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
		// Fires on the two lab mechanisms (an unschedulable pod, a sandbox that fails); quiet on a healthy run and
		// on kubeslow's own pods turned away for want of a pod slot.
		"KS-POD-EVENTS": {Fire: pods(Unschedulable), Clear: pods(OwnLimit)},
	}
}

// Unschedulable: 3 pods of 50 ask for more CPU than any node has.
var Unschedulable = Run{N: 50, Gap: 0.05, Creator: "client", QPS: 20, Ph: Even, Stuck: 3}

// OwnLimit: kubeslow's own pods, 3 of 50 turned away for the nodes' pod limit.
var OwnLimit = Run{N: 50, Gap: 0.05, Creator: "client", QPS: 20, Ph: Even, Stuck: 3,
	StuckEvent: [2]string{"FailedScheduling", "0/4 nodes are available: 4 Too many pods. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."}}

// SandboxFails: a RuntimeClass names a handler one node's runtime lacks; its pods' sandboxes fail 8 times
// before the pods go elsewhere (rescheduled) and start late.
var SandboxFails = Run{N: 40, Gap: 0.05, Creator: "client", QPS: 20, Ph: func(i int) (string, float64, float64, float64, float64) {
	node, s, sb, st, obs := Even(i)
	if node == "n1" {
		sb = 9
	}
	return node, s, sb, st, obs
}, Events: func(i int) [][2]string {
	if i%4 != 1 {
		return nil
	}
	return [][2]string{{"FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "missing" is configured`}}
}}
