// Package availabilitytest holds probe timelines of the apiserver's /readyz as the lab's apiserver answered
// them, and the rule fixtures made of them by the measurement's own analysis.
package availabilitytest

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// EtcdFailedBody is kube-apiserver 1.36's /readyz?verbose while etcd does not answer (its etcd check
// failed after --etcd-healthcheck-timeout).
const EtcdFailedBody = "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]etcd-readiness ok\n[+]informer-sync ok\n" +
	"[+]poststarthook/start-apiserver-admission-initializer ok\n[+]shutdown ok\nreadyz check failed\n"

// Step is one stretch of a timeline: n probes a second apart answering as kind does ("ok", "etcd",
// "refused").
type Step struct {
	Kind string
	N    int
}

// Timeline is the probes of steps, a tick a second apart from ruletest.T0, each tick the apiserver's own
// probe and etcd's as the measurement classifies the client's answers ("refused": the apiserver did not
// answer, so etcd's state was unseen).
func Timeline(steps ...Step) []availability.Probe {
	var ps []availability.Probe
	t := ruletest.T0
	for _, s := range steps {
		for range s.N {
			var api, etcd availability.Probe
			switch s.Kind {
			case "ok":
				api, etcd = availability.Classify([]byte("ok"), nil), availability.Classify([]byte("ok"), nil)
			case "etcd":
				api = availability.Classify([]byte("ok"), nil)
				etcd = availability.Classify([]byte(EtcdFailedBody), apierrors.NewGenericServerResponse(500, "get", schema.GroupResource{}, "", EtcdFailedBody, 0, true))
				etcd.Latency = 2 * time.Second
			case "refused":
				api = availability.Classify(nil, errors.New("dial tcp 198.18.0.2:6443: connect: connection refused"))
				etcd = availability.Probe{Cause: availability.CauseUnknown}
			}
			api.Target, etcd.Target = availability.TargetAPIServer, availability.TargetEtcd
			api.T, etcd.T, api.Latency = t, t, 20*time.Millisecond
			etcd.Latency = max(etcd.Latency, 20*time.Millisecond)
			ps = append(ps, api, etcd)
			t = t.Add(time.Second)
		}
	}
	return ps
}

// Result is the measurement's analysis of the timeline.
func Result(steps ...Step) func(t *testing.T) *result.Report {
	return func(t *testing.T) *result.Report {
		return ruletest.Report(nil, availability.Analyze(Timeline(steps...)))
	}
}

// RuleFixtures are availability.Rules' firing and clear fixtures. KS-ETCD-STALL: etcd stopped for 10 s
// fires; the apiserver restarted (8 s refused) and a one-probe etcd blip stay clear.
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		availability.RuleEtcdStall: {Fire: Result(Step{"ok", 5}, Step{"etcd", 10}, Step{"ok", 5}),
			Clear: Result(Step{"ok", 5}, Step{"refused", 8}, Step{"ok", 2}, Step{"etcd", 1}, Step{"ok", 5})},
		// The apiserver restarted (8 s refused) fires; etcd stalled (the apiserver answering 500) and one
		// refused probe stay clear.
		availability.RuleUnreachable: {Fire: Result(Step{"ok", 5}, Step{"refused", 8}, Step{"ok", 5}),
			Clear: Result(Step{"ok", 5}, Step{"etcd", 10}, Step{"ok", 2}, Step{"refused", 1}, Step{"ok", 5})},
	}
}

// S is Step{kind, n}.
func S(kind string, n int) Step { return Step{Kind: kind, N: n} }
