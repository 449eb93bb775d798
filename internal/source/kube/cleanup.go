package kube

import (
	"context"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CleanupReport counts what Cleanup deleted.
type CleanupReport struct {
	Deleted map[string]int
	// Skipped lists kinds that could not be listed or deleted (e.g. missing permission), with the reason.
	Skipped map[string]string
	// Installed counts the objects of `kubeslow watch install` left in place (a cleanup of every run).
	Installed int
}

// cleanupKinds are the kinds kubeslow creates, namespaces first (deleting one takes its contents).
var cleanupKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "configmaps"},
	// The node tier's binding of its agent to system:monitoring (cpnode.Options.MetricsAccess): cluster-scoped,
	// so it does not go with the run's namespace.
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

// Cleanup deletes every object carrying kubeslow's managed-by label (and the run label, if runID is set).
// It never deletes an object without the labels, and without runID it leaves a standing `kubeslow watch
// install` (InstalledRun) in place, counted in the report. Permission errors skip a kind and are reported, not fatal.
func Cleanup(ctx context.Context, c dynamic.Interface, runID string, log *slog.Logger) (*CleanupReport, error) {
	rep := &CleanupReport{Deleted: map[string]int{}, Skipped: map[string]string{}}
	opts := metav1.ListOptions{LabelSelector: Selector(runID).String(), Limit: cleanupPage}
	// Namespaces of ours that are going: their contents go with them, so they are not deleted one by one
	// (10,000 benchmark pods would otherwise cost 10,000 DELETEs).
	going := map[string]bool{}
	for _, gvr := range cleanupKinds {
		// Paged, so memory stays bounded however many objects a benchmark left.
		opts := opts
		for {
			l, err := c.Resource(gvr).List(ctx, opts)
			if err != nil {
				if apierrors.IsForbidden(err) {
					rep.Skipped[gvr.Resource] = "no permission to list: " + err.Error()
					break
				}
				return rep, fmt.Errorf("listing %s: %w", gvr.Resource, err)
			}
			for _, item := range l.Items {
				if runID == "" && item.GetLabels()[RunLabel] == InstalledRun {
					rep.Installed++
					continue
				}
				if err := deleteOne(ctx, c, gvr, item.GetNamespace(), item.GetName(), item.GetLabels(), item.GetDeletionTimestamp() != nil, going, rep, log); err != nil {
					return rep, err
				}
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return rep, nil
}

// cleanupPage is the LIST page size of Cleanup.
const cleanupPage = 500

// deleteOne deletes one listed object if it is kubeslow's and not already going (with its namespace or by
// itself), recording namespaces that go.
func deleteOne(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, labels map[string]string,
	deleting bool, going map[string]bool, rep *CleanupReport, log *slog.Logger) error {
	if labels[ManagedByLabel] != ManagedByValue {
		return nil // never delete what we did not label
	}
	isNS := gvr.Resource == "namespaces"
	if isNS && deleting {
		going[name] = true
	}
	if deleting || going[ns] {
		return nil // already going, or going with its namespace
	}
	var ri dynamic.ResourceInterface = c.Resource(gvr)
	if ns != "" {
		ri = c.Resource(gvr).Namespace(ns)
	}
	bg := metav1.DeletePropagationBackground
	err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	switch {
	case err == nil:
		rep.Deleted[gvr.Resource]++
		log.Debug("deleted", "kind", gvr.Resource, "namespace", ns, "name", name)
		if isNS {
			going[name] = true
		}
	case apierrors.IsNotFound(err):
		if isNS {
			going[name] = true
		}
	case apierrors.IsForbidden(err):
		rep.Skipped[gvr.Resource] = "no permission to delete: " + err.Error()
	default:
		return fmt.Errorf("deleting %s %s/%s: %w", gvr.Resource, ns, name, err)
	}
	return nil
}
