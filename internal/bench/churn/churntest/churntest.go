// Package churntest makes synthetic churn runs (start latency and a node's disk over time, by mechanism) for the tests
// of the analysis and the rules.
package churntest

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Model is a synthetic churn run: pods started one after another, their latency and the node's disk each a
// function of time, with log-normal noise. Tests in this package and in internal/engine/check use it to exercise
// the analysis and the rules on several mechanisms.
type Model struct {
	Seed  uint64
	Count int
	// Latency, Sync (write+fdatasync seconds), Pressure (percent) and DState at time t since the start.
	Latency  func(t time.Duration) float64
	Sync     func(t time.Duration) float64
	Pressure func(t time.Duration) float64
	DState   func(t time.Duration) float64
	// NoDisk leaves the disk unsampled.
	NoDisk bool
}

// Input runs the model.
func (m Model) Input() churn.Input {
	r := rand.New(rand.NewPCG(m.Seed, 11))
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var in churn.Input
	t := time.Duration(0)
	for i := 0; i < m.Count; i++ {
		l := m.Latency(t) * math.Exp(0.25*r.NormFloat64())
		in.Iterations = append(in.Iterations, churn.Iteration{Index: i, Pod: "p", Node: "lab-node-1", Start: t0.Add(t), Latency: l, Delete: 0.1,
			Phases: map[string]float64{"schedule": 0.01, "sandbox": l * 0.7, "start": l * 0.25, "observe": l * 0.04}})
		t += time.Duration((l + 0.15) * float64(time.Second))
	}
	if m.NoDisk {
		in.Disks = []churn.NodeDisk{{Node: "lab-node-1", Reason: "not sampled"}}
		return in
	}
	nd := churn.NodeDisk{Node: "lab-node-1", Dir: "/var/lib/containerd", Device: "loop7"}
	for s := time.Second; s <= t; s += time.Second {
		smp := diskprobe.Sample{T: t0.Add(s), SyncSeconds: m.Sync(s) * math.Exp(0.4*r.NormFloat64()), ReadIOPS: 5, WriteIOPS: 300}
		if m.Pressure != nil {
			smp.IOSomePercent = max(0, min(100, m.Pressure(s)+3*r.NormFloat64()))
		}
		if m.DState != nil {
			smp.DState = int(m.DState(s) + r.Float64())
		}
		nd.Samples = append(nd.Samples, smp)
	}
	in.Disks = []churn.NodeDisk{nd}
	return in
}

func step(at time.Duration, a, b float64) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < at {
			return a
		}
		return b
	}
}

func flat(v float64) func(time.Duration) float64 { return func(time.Duration) float64 { return v } }

// Models: the mechanisms the tests run.
var (
	// Credits: case C's shape — a burstable disk fine until its credits run out at 4 min, then at its
	// baseline: starts 0.8 s -> 9 s, fdatasync 0.4 ms -> 180 ms, I/O pressure 0 -> 70%, D-state tasks appear.
	Credits = Model{Seed: 1, Count: 400, Latency: step(4*time.Minute, 0.8, 9), Sync: step(4*time.Minute, 0.0004, 0.18),
		Pressure: step(4*time.Minute, 0, 70), DState: step(4*time.Minute, 0, 3)}
	// Neighbour: another workload starts hammering the same disk at 3 min (no credit model): starts 1 s ->
	// 3 s, fdatasync 1 ms -> 40 ms, pressure 2 -> 35%.
	Neighbour = Model{Seed: 2, Count: 300, Latency: step(3*time.Minute, 1, 3), Sync: step(3*time.Minute, 0.001, 0.04),
		Pressure: step(3*time.Minute, 2, 35)}
	// SteadySlowDisk: a slow disk class all along: fdatasync 30 ms, starts 3 s, no change.
	SteadySlowDisk = Model{Seed: 3, Count: 200, Latency: flat(3), Sync: flat(0.03), Pressure: flat(25)}
	// SlowDiskFastStarts: the same slow disk, but starts stay fast (the runtime barely waits on it, or the
	// disk is slow only at its tail): not a churn finding.
	SlowDiskFastStarts = Model{Seed: 7, Count: 200, Latency: flat(0.6), Sync: flat(0.03), Pressure: flat(10)}
	// ControlPlane: starts slow down at 2 min (say the scheduler is throttled) while the disk stays as it was.
	ControlPlane = Model{Seed: 4, Count: 300, Latency: step(2*time.Minute, 0.8, 4), Sync: flat(0.0005), Pressure: flat(1)}
	// Healthy: 0.8 s starts, a fast disk, nothing changes.
	Healthy = Model{Seed: 5, Count: 300, Latency: flat(0.8), Sync: flat(0.0004), Pressure: flat(0.5)}
	// CreditsNoDisk: case C's start latency with the disk not sampled.
	CreditsNoDisk = Model{Seed: 6, Count: 400, Latency: step(4*time.Minute, 0.8, 9), NoDisk: true}
)

// run is a report of churn.Analyze over model m.
func run(m Model) func(*testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, churn.Analyze(m.Input())) }
}

// RuleFixtures are churn.Rules' firing and clear fixtures: the synthetic mechanisms through churn.Analyze
// (churn's rules_test.go runs them all).
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-CHURN-DISK-KNEE": {Fire: run(Credits), Clear: run(ControlPlane)},              // a knee the disk shared, and one it did not
		"KS-CHURN-KNEE":      {Fire: run(ControlPlane), Clear: run(Credits)},              // the other way round
		"KS-CHURN-DISK-SLOW": {Fire: run(SteadySlowDisk), Clear: run(SlowDiskFastStarts)}, // slow starts on it, and fast ones
	}
}
