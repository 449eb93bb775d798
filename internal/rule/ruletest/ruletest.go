// Package ruletest holds what rule fixtures are made of: a rule's firing and clear reports, and the helpers
// the measurement packages' fixture packages share. Each measurement that declares rules has a fixture
// package (internal/measure/<name>/<name>test) whose RuleFixtures returns one Fixture per rule; the
// findings engine's tests (internal/engine/check) collect them all and fail for a rule without both.
package ruletest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Fixture is one rule's firing and clear reports, each what the measurement's own analysis (its pure
// Analyze, or the pure part of its Run) makes of scripted or recorded inputs — never metrics made up to fit
// the rule.
type Fixture struct {
	Fire, Clear func(t *testing.T) *result.Report
}

// T0 is the fixtures' start time.
var T0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// Report is a report of the results rs, with the cluster facts facts.
func Report(facts map[string]string, rs ...result.Result) *result.Report {
	return &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Cluster: result.Cluster{Facts: facts}, Results: rs}
}

// One is a report of the one result f makes.
func One(f func(t *testing.T) result.Result) func(t *testing.T) *result.Report {
	return func(t *testing.T) *result.Report { return Report(nil, f(t)) }
}

// Path is the file at rel from the repository's root (fixtures run in other packages' tests, so a path
// relative to the working directory would depend on which). The root is the nearest directory above the
// working directory (a test's is its package's) that holds go.mod: `make test` compiles with -trimpath,
// where the source file's own path (runtime.Caller) is no longer a path on disk.
func Path(rel string) string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			panic("ruletest: " + err.Error())
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				panic("ruletest: no go.mod above the working directory")
			}
			dir = parent
		}
	})
	return filepath.Join(root, filepath.FromSlash(rel))
}

var (
	rootOnce sync.Once
	root     string
)
