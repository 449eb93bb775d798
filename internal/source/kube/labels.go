package kube

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Labels every object kubeslow creates carries. Cleanup selects on ManagedByLabel (and RunLabel for one run)
// and never touches objects without them.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kubeslow"
	RunLabel       = "kubeslow.dev/run"
	// InstalledRun is the RunLabel value of what `kubeslow watch install` put in the cluster: not a run's but a
	// standing install, which `kubeslow cleanup` of every run leaves alone (`kubeslow watch uninstall`, or
	// `kubeslow cleanup --run watch-install`, removes it).
	InstalledRun = "watch-install"
)

// NewRunID returns a short, sortable, unique run id (UTC time + random suffix), valid as a label value.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// RunLabels returns the labels for an object created by run id.
func RunLabels(runID string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, RunLabel: runID}
}

// ObjectMeta returns metadata for an object created by run id.
func ObjectMeta(name, namespace, runID string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: RunLabels(runID)}
}

// Selector selects kubeslow's objects: of one run, or of every run when runID is "".
func Selector(runID string) labels.Selector {
	set := labels.Set{ManagedByLabel: ManagedByValue}
	if runID != "" {
		set[RunLabel] = runID
	}
	return labels.SelectorFromSet(set)
}
