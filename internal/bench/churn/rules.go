package churn

import (
	"fmt"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the churn rules read.
var (
	churnKneeRatio   = rule.Metric{Result: Name, Name: MetricKneeRatio}
	churnKneeAfterP  = rule.Metric{Result: Name, Name: MetricKneeP50After}
	churnKneeBefore  = rule.Metric{Result: Name, Name: MetricKneeP50Before}
	churnKneeIter    = rule.Metric{Result: Name, Name: MetricKneeIteration}
	churnKneeAt      = rule.Metric{Result: Name, Name: MetricKneeAfter}
	churnSyncBefore  = rule.Metric{Result: Name, Name: MetricKneeSyncBefore}
	churnSyncAfter   = rule.Metric{Result: Name, Name: MetricKneeSyncAfter}
	churnSyncRatio   = rule.Metric{Result: Name, Name: MetricKneeSyncRatio}
	churnPSIBefore   = rule.Metric{Result: Name, Name: MetricKneePSIBefore}
	churnPSIAfter    = rule.Metric{Result: Name, Name: MetricKneePSIAfter}
	churnDBefore     = rule.Metric{Result: Name, Name: MetricKneeDStateBefore}
	churnDAfter      = rule.Metric{Result: Name, Name: MetricKneeDStateAfter}
	churnIOPSBefore  = rule.Metric{Result: Name, Name: MetricKneeIOPSBefore}
	churnIOPSAfter   = rule.Metric{Result: Name, Name: MetricKneeIOPSAfter}
	churnDiskSyncP99 = rule.Metric{Result: Name, Name: MetricDiskSyncP99}
	churnStartP50    = rule.Metric{Result: Name, Name: MetricStartP50}
	churnDiskChanges = rule.Metric{Result: Name, Name: MetricDiskSyncChanges}
)

const kneeSource = "kubeslow: a change point of start latency over the run (PELT, normal mean-and-variance cost, MBIC penalty, on log latency) " +
	"where the median at least doubles to 1 s or more; case C: ~3 s per container, then 82 s after ~5,000 starts"

// kneeCond is the start-latency change every knee rule starts from; kneeAfterCond its floor.
var (
	kneeCond      = rule.Condition{Metric: churnKneeRatio, Op: ">=", Value: KneeRatio, Unit: "ratio"}
	kneeAfterCond = rule.Condition{Metric: churnKneeAfterP, Op: ">=", Value: KneeMinAfter, Unit: "seconds"}
	diskRiseCond  = rule.Condition{Metric: churnSyncRatio, Op: ">=", Value: DiskRatio, Unit: "ratio"}
	// slowStartCond: a slow disk is a churn finding only where starts are slow too.
	slowStartCond = rule.Condition{Metric: churnStartP50, Op: ">=", Value: KneeMinAfter, Unit: "seconds"}
)

// Rules are the rules over `kubeslow bench churn` (case C).
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-CHURN-DISK-KNEE", Title: "Pod start-up slowed suddenly with the node's disk: burst credits spent or I/O throttled", Severity: result.SeverityError, Cases: []string{"C"},
		When:  kneeCond,
		Also:  []rule.Condition{kneeAfterCond, diskRiseCond},
		Reads: []rule.Metric{churnKneeBefore, churnKneeIter, churnKneeAt, churnSyncBefore, churnSyncAfter, churnPSIBefore, churnPSIAfter, churnDBefore, churnDAfter, churnIOPSBefore, churnIOPSAfter},
		Source: kneeSource + fmt.Sprintf("; at the same moment the node's write+fdatasync p99 rose %.0fx or more "+
			"(a gp2 volume out of burst credits falls from up to 3,000 IOPS to its 3 IOPS/GiB baseline)", DiskRatio),
		Summary: "start latency p50 rose from {{.before}} to {{.after}} after {{.iteration}} starts ({{.elapsed}}); at the same moment fdatasync p99 on {{.node}}'s disk{{.device}} " +
			"rose from {{.syncBefore}} to {{.syncAfter}}{{.pressure}}{{.dstate}}: the disk slowed under sustained I/O (a burst-credit bucket spent, a throttle reached, or another workload on that disk), not a steady slow disk",
		Remediation: "Give the node's runtime disk (/var/lib/containerd, /var/lib/kubelet) sustained IOPS: provisioned IOPS (io1/io2, gp3 with IOPS set) or a local SSD " +
			"instead of a burstable volume; monitor the provider's credit balance (AWS EBS BurstBalance) and alert before it empties; do less I/O per start " +
			"(smaller images, fewer log writes, no per-start image pulls).",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit { return kneeHits(r, rl, true) },
	}, {
		ID: "KS-CHURN-KNEE", Title: "Pod start-up slowed suddenly during the run (the node's disk did not)", Severity: result.SeverityWarning, Cases: []string{"C", "E"},
		When:    kneeCond,
		Also:    []rule.Condition{kneeAfterCond},
		Reads:   []rule.Metric{churnKneeBefore, churnKneeIter, churnKneeAt, churnSyncRatio},
		Source:  kneeSource + fmt.Sprintf("; the sampled disks' write+fdatasync p99 rose less than %.0fx at that moment", DiskRatio),
		Summary: "start latency p50 rose from {{.before}} to {{.after}} after {{.iteration}} starts ({{.elapsed}}); {{.disk}}",
		Remediation: "Look at what changed at that moment: the slow phase in the iterations (schedule: the scheduler or the apiserver; sandbox: the runtime or CNI; start: the runtime); " +
			"the control plane's latency and saturation (kubeslow run), the node's CPU and memory pressure, and the runtime's disk if it was not sampled.",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit { return kneeHits(r, rl, false) },
	}, {
		ID: "KS-CHURN-DISK-SLOW", Title: "The node's disk is slow throughout (a steady slow disk, not a sudden change)", Severity: result.SeverityWarning, Cases: []string{"B", "C"},
		When: rule.Condition{Metric: churnDiskSyncP99, Op: ">=", Value: disk.EtcdSyncP99.Seconds(), Unit: "seconds"},
		Also: []rule.Condition{{Metric: churnDiskChanges, Op: "<=", Value: 0, Unit: "count"}, slowStartCond},
		Source: "etcd's guidance for sync writes (p99 below 10 ms) applied to the runtime disk's 4 KiB write+fdatasync probe, with no change point over the run " +
			"(PELT/MBIC), while starts were slow throughout (p50 of 1 s or more): a local SSD does it in well under 1 ms, a network volume in 1-3 ms",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			// The start p50 is one number for the run; the disk conditions are per node.
			p50 := churnStartP50.In(r, nil)
			if p50 == nil || !rl.AlsoOn(churnStartP50).Holds(p50.Value) {
				return nil
			}
			changes := rl.AlsoOn(churnDiskChanges)
			var hits []rule.Hit
			for _, m := range churnDiskSyncP99.Samples(r) {
				c := churnDiskChanges.In(r, m.Labels)
				if !rl.When.Holds(m.Value) || c == nil || !changes.Holds(c.Value) {
					continue
				}
				hits = append(hits, rule.Hit{Key: result.FormatLabels(map[string]string{"node": m.Labels["node"]}), Value: m.Value,
					Evidence: []result.Evidence{churnDiskSyncP99.Evidence(m), churnDiskChanges.Evidence(*c), churnStartP50.Evidence(*p50)},
					Vars: map[string]string{"value": result.FormatQuantity(m.Value, "seconds"), "node": m.Labels["node"], "dir": m.Labels["dir"],
						"p50": Secs(p50.Value)}})
			}
			return hits
		},
		Summary:     "write+fdatasync p99 {{.value}} on {{.node}}'s disk ({{.dir}}) with no change over the run: the disk class is slow all the time, not running out of credits",
		Remediation: "Move the runtime's and kubelet's directories to a faster disk class (local SSD, provisioned IOPS); check that nothing else on the node saturates that disk.",
	}}
}

// kneeHits is the knee rules' match: the knee (a single, global item) with the disk of every node sampled
// alongside; withDisk selects the case where a node's disk changed at the same moment, !withDisk the case
// where none did (or none was sampled).
func kneeHits(r *result.Report, rl rule.Rule, withDisk bool) []rule.Hit {
	ratio, after := rl.When.Metric.In(r, nil), churnKneeAfterP.In(r, nil)
	if ratio == nil || after == nil || !rl.When.Holds(ratio.Value) || !rl.AlsoOn(churnKneeAfterP).Holds(after.Value) {
		return nil
	}
	q := func(m rule.Metric, l map[string]string) *result.Metric { return m.In(r, l) }
	before, iter, at := q(churnKneeBefore, nil), q(churnKneeIter, nil), q(churnKneeAt, nil)
	if before == nil || iter == nil || at == nil {
		return nil
	}
	vars := map[string]string{"before": Secs(before.Value), "after": Secs(after.Value),
		"iteration": fmt.Sprintf("%.0f", iter.Value), "elapsed": minutes(at.Value)}
	ev := []result.Evidence{churnKneeRatio.Evidence(*ratio), churnKneeBefore.Evidence(*before), churnKneeAfterP.Evidence(*after), churnKneeIter.Evidence(*iter)}
	// The node whose disk changed most at the knee (the disk condition is declared on KS-CHURN-DISK-KNEE).
	var best *result.Metric
	sampled := 0
	for _, sr := range churnSyncRatio.Samples(r) {
		sampled++
		if diskRiseCond.Holds(sr.Value) && (best == nil || sr.Value > best.Value) {
			best = &sr
		}
	}
	if withDisk != (best != nil) {
		return nil
	}
	if !withDisk {
		switch {
		case sampled == 0:
			vars["disk"] = "the nodes' disks were not sampled, so the disk is not ruled out"
		default:
			vars["disk"] = "the disks sampled on the same nodes did not change at that moment, so look beyond the disk"
		}
		return []rule.Hit{{Value: ratio.Value, Evidence: ev, Vars: vars}}
	}
	l := best.Labels
	sb, sa := q(churnSyncBefore, l), q(churnSyncAfter, l)
	if sb == nil || sa == nil {
		return nil
	}
	vars["node"], vars["syncBefore"], vars["syncAfter"] = l["node"], Secs(sb.Value), Secs(sa.Value)
	vars["device"] = ""
	if l["device"] != "" {
		vars["device"] = " (" + l["device"] + ")"
	}
	ev = append(ev, churnSyncRatio.Evidence(*best), churnSyncBefore.Evidence(*sb), churnSyncAfter.Evidence(*sa))
	vars["pressure"], vars["dstate"] = "", ""
	if pa, pb := q(churnPSIAfter, l), q(churnPSIBefore, l); pa != nil && pb != nil {
		vars["pressure"] = fmt.Sprintf(" and I/O pressure from %.0f%% to %.0f%%", pb.Value, pa.Value)
		ev = append(ev, churnPSIBefore.Evidence(*pb), churnPSIAfter.Evidence(*pa))
	}
	if da, db := q(churnDAfter, l), q(churnDBefore, l); da != nil && db != nil && da.Value > db.Value {
		vars["dstate"] = fmt.Sprintf(", tasks in D state %.1f -> %.1f on average", db.Value, da.Value)
		ev = append(ev, churnDBefore.Evidence(*db), churnDAfter.Evidence(*da))
	}
	if ia, ib := q(churnIOPSAfter, l), q(churnIOPSBefore, l); ia != nil && ib != nil {
		ev = append(ev, churnIOPSBefore.Evidence(*ib), churnIOPSAfter.Evidence(*ia))
	}
	return []rule.Hit{{Key: result.FormatLabels(map[string]string{"node": l["node"]}), Value: ratio.Value, Evidence: ev, Vars: vars}}
}

func minutes(s float64) string {
	if s < 120 {
		return fmt.Sprintf("%.0f s", s)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.0f min", s/60), ".0")
}
