package lab

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestDeleteNoisyOnlyItsOwn: the APF scenarios' Stop deletes the objects they made, by name, and no other
// FlowSchema, priority level, binding or ServiceAccount; a second Stop (nothing left) is no error.
func TestDeleteNoisyOnlyItsOwn(t *testing.T) {
	om := func(name, ns string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	c := fake.NewClientset(
		&flowcontrolv1.FlowSchema{ObjectMeta: om(NoisyFlowSchema, "")}, &flowcontrolv1.FlowSchema{ObjectMeta: om("service-accounts", "")},
		&flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: om(SmallPriorityLevel, "")}, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: om("workload-low", "")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: om(noisyBinding, "")}, &rbacv1.ClusterRoleBinding{ObjectMeta: om("view-all", "")},
		&corev1.ServiceAccount{ObjectMeta: om(NoisyServiceAccount, "default")}, &corev1.ServiceAccount{ObjectMeta: om("default", "default")})
	ctx := context.Background()
	for i := range 2 {
		if err := deleteNoisy(ctx, c); err != nil {
			t.Fatalf("stop %d: %v", i+1, err)
		}
	}
	fs, _ := c.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	pl, _ := c.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	crb, _ := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	sa, _ := c.CoreV1().ServiceAccounts("default").List(ctx, metav1.ListOptions{})
	if len(fs.Items) != 1 || fs.Items[0].Name != "service-accounts" || len(pl.Items) != 1 || pl.Items[0].Name != "workload-low" ||
		len(crb.Items) != 1 || crb.Items[0].Name != "view-all" || len(sa.Items) != 1 || sa.Items[0].Name != "default" {
		t.Fatalf("left: %v %v %v %v", fs.Items, pl.Items, crb.Items, sa.Items)
	}
}
