package lab

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// ManagedByLab names the lab as the manager of its own cluster objects: the kube.ManagedByLabel value of what a
// scenario creates on a running lab (the webhook's configuration, the noisy client's ServiceAccount and flow
// control), the lab's and not a run's, so that `kubeslow cleanup` (which selects kube.ManagedByValue) never
// touches them and the scenario's Stop deletes them; and the EndpointSlice managed-by of kube-dns-lab.
const ManagedByLab = "kubeslow-lab"

// labMeta is the metadata of a cluster object a scenario creates: its name, namespace and ManagedByLab.
func labMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{kube.ManagedByLabel: ManagedByLab}}
}

// created is a Create's outcome with AlreadyExists taken as done: `lab up` and the scenarios create their
// objects idempotently (a lab brought up again over its etcd, a scenario started a second time).
func created(_ any, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
