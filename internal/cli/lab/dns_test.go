package lab

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab"
)

func TestParseDNSChange(t *testing.T) {
	for _, c := range []struct {
		setP      bool
		p         string
		setL      bool
		l         string
		placement string
		limit     string // "-": unchanged
		err       string
	}{
		{err: "nothing to change"},
		{setP: true, p: lab.DNSSpread, placement: lab.DNSSpread, limit: "-"},
		{setP: true, p: "wide", err: `--placement "wide"`},
		{setL: true, l: "20m", limit: "20m"},
		{setL: true, l: "", limit: "0"},
		{setL: true, l: "0", limit: "0"},
		{setL: true, l: "-1", err: `--cpu-limit "-1"`},
		{setL: true, l: "lots", err: `--cpu-limit "lots"`},
		{setP: true, p: lab.DNSPacked, setL: true, l: "100m", placement: lab.DNSPacked, limit: "100m"},
	} {
		ch, err := parseDNSChange(c.setP, c.p, c.setL, c.l)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		limit := "-"
		if ch.cpuLimit != nil {
			limit = ch.cpuLimit.String()
		}
		if ch.placement != c.placement || limit != c.limit {
			t.Errorf("%+v: placement %q limit %s, want %q %s", c, ch.placement, limit, c.placement, c.limit)
		}
	}
}

// dnsLab is a fake API server holding the lab's DNS Deployment of two replicas, already rolled out (a fake has
// no controller: its status says every replica is updated, available and published).
func dnsLab(t *testing.T, spec corev1.PodSpec) *fake.Clientset {
	t.Helper()
	labels := map[string]string{lab.DNSPodLabel: "kube-dns"}
	objs := []runtime.Object{&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: lab.CoreDNSDeployment, Namespace: "kube-system", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2},
	}}
	var eps []discoveryv1.Endpoint
	for _, n := range []string{"a", "b"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "coredns-" + n, Namespace: "kube-system", Labels: labels}})
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{"198.18.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	objs = append(objs, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-1", Namespace: "kube-system",
		Labels: map[string]string{"kubernetes.io/service-name": "kube-dns"}}, Endpoints: eps})
	return fake.NewClientset(objs...)
}

// TestDNSChangeApply: `lab dns` changes the running Deployment's pod template (placement, CPU limit) and
// nothing it was not asked to; without the Deployment it says the lab runs DNS otherwise.
func TestDNSChangeApply(t *testing.T) {
	ctx := context.Background()
	quiet := func(string, ...any) {}
	coredns := corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m")}}}},
		NodeSelector: map[string]string{lab.RealNodeLabel: "real", corev1.LabelHostname: lab.RealNodeName(1)}}
	template := func(c *fake.Clientset) corev1.PodSpec {
		dep, err := c.AppsV1().Deployments("kube-system").Get(ctx, lab.CoreDNSDeployment, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return dep.Spec.Template.Spec
	}

	c := dnsLab(t, coredns)
	if err := (dnsChange{placement: lab.DNSSpread}).apply(ctx, c, quiet); err != nil {
		t.Fatal(err)
	}
	s := template(c)
	if _, packed := s.NodeSelector[corev1.LabelHostname]; packed || len(s.TopologySpreadConstraints) != 1 ||
		s.TopologySpreadConstraints[0].TopologyKey != corev1.LabelHostname {
		t.Errorf("spread: node selector %v, spread %+v", s.NodeSelector, s.TopologySpreadConstraints)
	}
	if q := s.Containers[0].Resources.Limits[corev1.ResourceCPU]; q.String() != "20m" {
		t.Errorf("spread changed the CPU limit to %s", q.String())
	}

	none := resource.Quantity{}
	if err := (dnsChange{cpuLimit: &none}).apply(ctx, c, quiet); err != nil {
		t.Fatal(err)
	}
	s = template(c)
	if _, ok := s.Containers[0].Resources.Limits[corev1.ResourceCPU]; ok || len(s.TopologySpreadConstraints) != 1 {
		t.Errorf("no limit: limits %v, spread %+v", s.Containers[0].Resources.Limits, s.TopologySpreadConstraints)
	}

	err := (dnsChange{placement: lab.DNSPacked}).apply(ctx, fake.NewClientset(), quiet)
	if err == nil || !strings.Contains(err.Error(), "--dns-replicas") {
		t.Errorf("without the DNS Deployment: %v", err)
	}
}
