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
}

// Cleanup deletes every object carrying kubeslow's managed-by label (and the run label, if runID is set).
// It never deletes an object without the labels. Permission errors skip a kind and are reported, not fatal.
func Cleanup(ctx context.Context, c dynamic.Interface, runID string, log *slog.Logger) (*CleanupReport, error) {
	rep := &CleanupReport{Deleted: map[string]int{}, Skipped: map[string]string{}}
	opts := metav1.ListOptions{LabelSelector: Selector(runID).String()}
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	for _, gvr := range cleanupKinds {
		l, err := c.Resource(gvr).List(ctx, opts)
		if err != nil {
			if apierrors.IsForbidden(err) {
				rep.Skipped[gvr.Resource] = "no permission to list: " + err.Error()
				continue
			}
			return rep, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		for _, item := range l.Items {
			if item.GetLabels()[ManagedByLabel] != ManagedByValue || item.GetDeletionTimestamp() != nil {
				continue // never delete what we did not label; skip what is already going
			}
			var ri dynamic.ResourceInterface = c.Resource(gvr)
			if ns := item.GetNamespace(); ns != "" {
				ri = c.Resource(gvr).Namespace(ns)
			}
			err := ri.Delete(ctx, item.GetName(), del)
			switch {
			case err == nil:
				rep.Deleted[gvr.Resource]++
				log.Debug("deleted", "kind", gvr.Resource, "namespace", item.GetNamespace(), "name", item.GetName())
			case apierrors.IsNotFound(err):
			case apierrors.IsForbidden(err):
				rep.Skipped[gvr.Resource] = "no permission to delete: " + err.Error()
			default:
				return rep, fmt.Errorf("deleting %s %s/%s: %w", gvr.Resource, item.GetNamespace(), item.GetName(), err)
			}
		}
	}
	return rep, nil
}
