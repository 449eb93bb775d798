package lab

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

func TestCreated(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	if err := created(nil, apierrors.NewAlreadyExists(gr, "kube-dns")); err != nil {
		t.Errorf("AlreadyExists: %v, want nil (the object is there)", err)
	}
	if err := created(&struct{}{}, nil); err != nil {
		t.Errorf("nil: %v", err)
	}
	other := apierrors.NewForbidden(gr, "kube-dns", errors.New("no"))
	if err := created(nil, other); err != other {
		t.Errorf("Forbidden: %v, want it returned as it is", err)
	}
	if m := labMeta("x", "default"); m.Name != "x" || m.Namespace != "default" || m.Labels[kube.ManagedByLabel] != ManagedByLab || ManagedByLab == kube.ManagedByValue {
		t.Errorf("labMeta: %+v (the lab's value must differ from a run's, which cleanup deletes)", m)
	}
}
