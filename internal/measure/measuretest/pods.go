// Package measuretest helps the measurements' tests run on client-go's fake clientset.
package measuretest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Clientset is a fake clientset holding objs whose pod LISTs honour field selectors on spec.nodeName and
// status.phase, as the apiserver does (the fake's tracker filters by labels only). The count it returns is
// the pod LISTs made so far.
func Clientset(objs ...runtime.Object) (*fake.Clientset, *int) {
	cs := fake.NewClientset(objs...)
	lists := 0
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		sel := a.(k8stesting.ListActionImpl).GetListRestrictions().Fields
		o, err := cs.Tracker().List(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		l := o.(*corev1.PodList)
		var keep []corev1.Pod
		for _, p := range l.Items {
			if sel == nil || sel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName, "status.phase": string(p.Status.Phase)}) {
				keep = append(keep, p)
			}
		}
		l.Items = keep
		return true, l, nil
	})
	return cs, &lists
}
