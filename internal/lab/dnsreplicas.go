package lab

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Cluster DNS as a Deployment (DNSSettings.Replicas > 0): CoreDNS pods in kube-system on the real nodes,
// labelled k8s-app=kube-dns and selected by the kube-dns Service, so the EndpointSlice controller publishes
// them like in any cluster. Names under ExternalZone are forwarded to the lab's upstream, a lab process on
// UpstreamDNSIP that answers each source address at most DNSSettings.UpstreamQPS queries per second (case B's
// per-VM limit); each real node masquerades its pods' traffic to the upstream to the node's own address, so
// the limit counts per node, as a cloud's resolver counts per VM.
const (
	// UpstreamDNSIP is the upstream's address: a second address of the lab bridge in the control-plane
	// namespace (on the node network, so the nodes and the host reach it).
	UpstreamDNSIP = "198.19.255.53"
	// ExternalZone is the zone the upstream serves: every name under it has an A record (UpstreamAnswer).
	ExternalZone   = "ext.kubeslow.test"
	UpstreamAnswer = "198.18.0.80"
	// DNSUpstream is the upstream's lab process.
	DNSUpstream = "dns-upstream"
	// CoreDNSDeployment is the Deployment's (and its ConfigMap's and ServiceAccount's) name in kube-system.
	CoreDNSDeployment = "coredns"
	// DNSPodLabel selects the DNS pods (the kube-dns Service's selector in this mode).
	DNSPodLabel = "k8s-app"
	dnsPodValue = "kube-dns"
	// corednsPodHealthPort is the health plugin's port inside the pods (its default).
	corednsPodHealthPort = 8080
)

// The DNS replicas' placements.
const (
	// DNSSpread: a topology spread on kubernetes.io/hostname, maxSkew 1, DoNotSchedule.
	DNSSpread = "spread"
	// DNSPacked: every replica on lab-node-1 (a nodeSelector; no spread protection), as case B's bin-packing did.
	DNSPacked = "packed"
)

// DefaultUpstreamQPS is the upstream's per-source limit unless set: case B's ~200 DNS queries/s per VM.
const DefaultUpstreamQPS = 200

// replicaCorefile is CoreDNS's configuration in the pods: the cluster zones as in process mode (from the
// in-cluster API), and ExternalZone forwarded to the upstream without a cache, so that every external query
// of a load reaches the upstream's limit.
func replicaCorefile(s DNSSettings) string {
	success, denial := cacheTTLs(s)
	return fmt.Sprintf(`.:53 {
    errors
    health :%[1]d
    ready :%[2]d
    prometheus :%[3]d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache {
        success 9984 %[4]d
        denial 9984 %[5]d %[5]d
    }
}
%[6]s:53 {
    errors
    prometheus :%[3]d
    forward . %[7]s:53
}
`, corednsPodHealthPort, corednsReadyPort, corednsMetricsPort, success, denial, ExternalZone, UpstreamDNSIP)
}

// dnsPlacement is the pod spec's placement part: always the real nodes; packed on lab-node-1, or spread.
func dnsPlacement(spec *corev1.PodSpec, placement string) {
	spec.NodeSelector = map[string]string{RealNodeLabel: "real"}
	spec.TopologySpreadConstraints = nil
	switch placement {
	case DNSPacked:
		spec.NodeSelector[corev1.LabelHostname] = RealNodeName(1)
	default:
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{DNSPodLabel: dnsPodValue}}}}
	}
}

// corednsDeployment is the cluster DNS Deployment. It is replaced whole on a placement change (Recreate), so
// that a spread never counts the old replicas it replaces.
func corednsDeployment(s DNSSettings) *appsv1.Deployment {
	labels := map[string]string{DNSPodLabel: dnsPodValue}
	spec := corev1.PodSpec{
		ServiceAccountName: CoreDNSDeployment,
		// The node's resolv.conf names the cluster DNS itself; CoreDNS forwards nothing there.
		DNSPolicy: corev1.DNSDefault,
		Containers: []corev1.Container{{
			Name: "coredns", Image: CoreDNSImage, ImagePullPolicy: corev1.PullNever,
			Args: []string{"-conf", "/etc/coredns/Corefile"},
			Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: corednsMetricsPort, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(corednsReadyPort)}},
				PeriodSeconds: 2},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(corednsPodHealthPort)}},
				PeriodSeconds: 10, FailureThreshold: 5},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
		}},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: CoreDNSDeployment}}}}},
	}
	if s.CPULimit != "" {
		// Validated by Config.Validate.
		dnsCPULimit(&spec, resource.MustParse(s.CPULimit))
	}
	dnsPlacement(&spec, s.Placement)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: CoreDNSDeployment, Namespace: "kube-system", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(s.Replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}

// ensureDNSDeployment creates CoreDNS's ServiceAccount, ConfigMap and Deployment and waits until every replica
// is Ready and published in the kube-dns EndpointSlices.
func ensureDNSDeployment(ctx context.Context, c kubernetes.Interface, s DNSSettings) error {
	meta := metav1.ObjectMeta{Name: CoreDNSDeployment, Namespace: "kube-system"}
	if err := created(c.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"Corefile": replicaCorefile(s)}}
	if err := created(c.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{})); err != nil {
		return err
	}
	if err := created(c.AppsV1().Deployments("kube-system").Create(ctx, corednsDeployment(s), metav1.CreateOptions{})); err != nil {
		return err
	}
	return waitDNSReplicas(ctx, c, s.Replicas)
}

// SetDNSPlacement changes the DNS Deployment's placement (DNSSpread or DNSPacked) and waits until the new
// replicas are Ready and published and the old ones are gone (the Deployment recreates its pods).
func SetDNSPlacement(ctx context.Context, c kubernetes.Interface, placement string) error {
	return updateDNSPods(ctx, c, func(spec *corev1.PodSpec) { dnsPlacement(spec, placement) })
}

// updateDNSPods changes the running DNS Deployment's pod template with change and waits until every replica
// of the new template is Ready and published (the Deployment recreates its pods).
func updateDNSPods(ctx context.Context, c kubernetes.Interface, change func(*corev1.PodSpec)) error {
	dep, err := c.AppsV1().Deployments("kube-system").Get(ctx, CoreDNSDeployment, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the lab's DNS Deployment (lab up --dns-replicas): %w", err)
	}
	change(&dep.Spec.Template.Spec)
	if _, err := c.AppsV1().Deployments("kube-system").Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return waitDNSReplicas(ctx, c, int(ptr.Deref(dep.Spec.Replicas, 1)))
}

// waitDNSReplicas waits until the Deployment's rollout is complete (every replica updated and available,
// no other pod) and the kube-dns EndpointSlices hold exactly that many ready endpoints.
func waitDNSReplicas(ctx context.Context, c kubernetes.Interface, want int) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		dep, err := c.AppsV1().Deployments("kube-system").Get(ctx, CoreDNSDeployment, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := dep.Status
		last = fmt.Sprintf("generation %d observed %d, %d replicas, %d updated, %d available", dep.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
		if st.ObservedGeneration < dep.Generation || int(st.UpdatedReplicas) != want || int(st.AvailableReplicas) != want || int(st.Replicas) != want {
			return false, nil
		}
		pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: DNSPodLabel + "=" + dnsPodValue})
		if err != nil {
			return false, err
		}
		if len(pods.Items) != want {
			last += fmt.Sprintf(", %d pods", len(pods.Items))
			return false, nil
		}
		slices, err := c.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if ptr.Deref(e.Conditions.Ready, false) {
					ready += len(e.Addresses)
				}
			}
		}
		last += fmt.Sprintf(", %d ready endpoints", ready)
		return ready == want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d DNS replicas (%s): %w", want, last, err)
	}
	return nil
}

// addUpstreamAddress gives the lab bridge the upstream's address.
func addUpstreamAddress(ctx context.Context) error {
	return host.IPIn(ctx, NetNS, "addr", "replace", UpstreamDNSIP+"/32", "dev", Bridge)
}

// masqueradeToUpstream makes node n send its pods' queries to the upstream from the node's own address (an
// iptables MASQUERADE rule in the node's namespace, removed with it by `lab down`).
func masqueradeToUpstream(ctx context.Context, n realNode) error {
	rule := func(op string) []string {
		return []string{"iptables", "-w", "5", "-t", "nat", op, "POSTROUTING", "-s", PodCIDR, "-d", UpstreamDNSIP + "/32", "-p", "udp", "-j", "MASQUERADE"}
	}
	if _, err := host.RunIn(ctx, host.Short, nil, n.netns(), rule("-C")...); err == nil {
		return nil
	}
	_, err := host.RunIn(ctx, host.Short, nil, n.netns(), rule("-A")...)
	return err
}

// upstreamAnswers is the upstream's health check: a name under ExternalZone gets an A record.
func upstreamAnswers(ctx context.Context) bool {
	m := new(dns.Msg)
	m.SetQuestion("health."+dns.Fqdn(ExternalZone), dns.TypeA)
	cl := &dns.Client{Timeout: time.Second}
	r, _, err := cl.ExchangeContext(ctx, m, net.JoinHostPort(UpstreamDNSIP, "53"))
	return err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1
}

// upstreamArgv runs the upstream from the kubeslow binary.
func upstreamArgv(agent string, s DNSSettings) []string {
	return []string{agent, "agent", "dns-upstream", "--listen", net.JoinHostPort(UpstreamDNSIP, "53"), "--zone", ExternalZone,
		"--answer", UpstreamAnswer, "--limit", strconv.FormatFloat(upstreamQPS(s), 'g', -1, 64)}
}

// upstreamQPS is the upstream's per-source limit.
func upstreamQPS(s DNSSettings) float64 {
	if s.UpstreamQPS == 0 {
		return DefaultUpstreamQPS
	}
	return s.UpstreamQPS
}

// dnsCPULimit sets the CoreDNS container's CPU limit (a limit without a request makes the request equal to it);
// zero removes both.
func dnsCPULimit(spec *corev1.PodSpec, q resource.Quantity) {
	r := &spec.Containers[0].Resources
	delete(r.Limits, corev1.ResourceCPU)
	delete(r.Requests, corev1.ResourceCPU)
	if !q.IsZero() {
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: q}
	}
}

// SetDNSCPULimit gives the running DNS Deployment's CoreDNS containers a CPU limit (zero: none), replacing its
// pods (Recreate), and waits until every replica is Ready and published.
func SetDNSCPULimit(ctx context.Context, c kubernetes.Interface, limit resource.Quantity) error {
	return updateDNSPods(ctx, c, func(spec *corev1.PodSpec) { dnsCPULimit(spec, limit) })
}
