package lab

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// CoreDNS runs as a process in the control-plane namespace on the control-plane address; the usual kube-dns
// Service (ClusterDNSIP, the kubelets' clusterDNS) points at it through an EndpointSlice the lab manages,
// so pods reach it through kube-proxy like in any cluster.
const (
	corednsUser        = "coredns"
	corednsHealthPort  = 8082
	corednsReadyPort   = 8181
	corednsMetricsPort = 9153
)

// corefile renders CoreDNS's configuration. Cache TTLs are settable because case A depends on them: the
// negative (denial) TTL decides how long a not-yet-existing pod name stays NXDOMAIN for a client. It is both
// the cap and the floor of a negative entry's TTL (the kubernetes plugin answers NXDOMAIN with a 5 s SOA TTL,
// which the cache would otherwise keep), so a denial TTL of 20 s keeps an early NXDOMAIN for 20 s.
func corefile(d Dirs, s DNSSettings) string {
	success, denial := cacheTTLs(s)
	return fmt.Sprintf(`.:53 {
    bind %[1]s
    errors
    health %[1]s:%[2]d
    ready %[1]s:%[3]d
    prometheus %[1]s:%[4]d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %[5]q kubeslow-lab
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache {
        success 9984 %[6]d
        denial 9984 %[7]d %[7]d
    }
}
`, ControlPlaneIP, corednsHealthPort, corednsReadyPort, corednsMetricsPort, d.componentKubeconfig("coredns"), success, denial)
}

// cacheTTLs are the cache's positive and negative TTLs in seconds (defaults 30 and 5).
func cacheTTLs(s DNSSettings) (success, denial int) {
	success, denial = 30, 5
	if s.CacheTTL.Duration > 0 {
		success = int(s.CacheTTL.Seconds())
	}
	if s.DenialTTL.Duration > 0 {
		denial = int(s.DenialTTL.Seconds())
	}
	return success, denial
}

// corefilePath is where CoreDNS's configuration (corefile) goes.
func corefilePath(d Dirs) string { return filepath.Join(d.ConfDir(), "Corefile") }

// ensureDNSObjects creates CoreDNS's RBAC (for the process's user and the pods' ServiceAccount) and the kube-dns
// Service: in process mode with an EndpointSlice the lab manages, with replicas selecting their pods.
func ensureDNSObjects(ctx context.Context, c kubernetes.Interface, replicas bool) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-lab:coredns"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	if err := created(c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeslow-lab:coredns"},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: corednsUser},
			{Kind: "ServiceAccount", Name: CoreDNSDeployment, Namespace: "kube-system"}}}
	if err := created(c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})); err != nil {
		return err
	}
	labels := map[string]string{"k8s-app": "kube-dns"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system", Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: ClusterDNSIP, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			{Name: "metrics", Port: corednsMetricsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(corednsMetricsPort)},
		}}}
	if replicas {
		svc.Spec.Selector = labels
	}
	if err := created(c.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{})); err != nil {
		return err
	}
	if replicas {
		return nil
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-lab", Namespace: "kube-system", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns", discoveryv1.LabelManagedBy: ManagedByLab}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("dns"), Port: ptr.To(int32(53)), Protocol: &udp},
			{Name: ptr.To("dns-tcp"), Port: ptr.To(int32(53)), Protocol: &tcp},
			{Name: ptr.To("metrics"), Port: ptr.To(int32(corednsMetricsPort)), Protocol: &tcp}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ControlPlaneIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if err := created(c.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, slice, metav1.CreateOptions{})); err != nil {
		return err
	}
	return nil
}
