package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Network is what the endpoints and DNS steps read: the namespace's Services and their EndpointSlices.
type Network struct {
	Services []corev1.Service
	Slices   []discoveryv1.EndpointSlice
	// SlicesErr is why the EndpointSlices could not be read (nil: read).
	SlicesErr error
}

// selecting are the Services of net whose selector selects p, by name.
func selecting(p *corev1.Pod, net Network) []corev1.Service {
	var out []corev1.Service
	for _, s := range net.Services {
		if s.Namespace == p.Namespace && len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(p.Labels)) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// endpointsStep is the pod in its first Service's EndpointSlices: ready there by the slice's last write by the
// EndpointSlice controller (managedFields, 1 s) — an upper bound, since a slice keeps no time per endpoint.
func endpointsStep(p *corev1.Pod, net Network, ready time.Time) (result.Step, bool) {
	svcs := selecting(p, net)
	if len(svcs) == 0 && net.SlicesErr == nil {
		return result.Step{}, false
	}
	s := result.Step{Name: StepEndpoints, Start: ready, Precision: result.PrecisionSecond,
		Source: "condition Ready → the EndpointSlice's last write (managedFields)"}
	if net.SlicesErr != nil {
		s.Status, s.Note = result.StepUnknown, "EndpointSlices not readable: "+net.SlicesErr.Error()
		return s, len(svcs) > 0 || net.Services == nil
	}
	svc := svcs[0]
	s.Details = map[string]string{"service": svc.Name}
	if len(svcs) > 1 {
		var others []string
		for _, o := range svcs[1:] {
			others = append(others, o.Name)
		}
		s.Details["other_services"] = strings.Join(others, ",")
	}
	for _, sl := range net.Slices {
		if sl.Namespace != p.Namespace || sl.Labels[discoveryv1.LabelServiceName] != svc.Name {
			continue
		}
		for _, ep := range sl.Endpoints {
			if ep.TargetRef == nil || !(ep.TargetRef.UID == p.UID && p.UID != "" || ep.TargetRef.UID == "" && ep.TargetRef.Name == p.Name) {
				continue
			}
			s.Details["slice"] = sl.Name
			// A nil ready is "unknown", which consumers are told to read as ready.
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				s.Status, s.Note = result.StepPending, "the pod's endpoint is in "+sl.Name+" but not ready"
				return s, true
			}
			w := sliceWrite(&sl)
			s.End, s.Status, s.UpperBound = w, result.StepDone, true
			s.Seconds = seconds(ready, w)
			s.Note = "ready in " + sl.Name + "; the slice keeps no time per endpoint: its last write is the latest the endpoint can have become ready"
			if w.IsZero() {
				s.Status, s.Note = result.StepUnknown, "ready in "+sl.Name+", which carries no write time (managedFields)"
			}
			if ready.IsZero() {
				s.Seconds = 0
				s.Note += "; the pod is not Ready (publishNotReadyAddresses?)"
			}
			return s, true
		}
	}
	s.Status, s.Note = result.StepPending, "the pod is in none of "+svc.Name+"'s EndpointSlices"
	if !ready.IsZero() {
		s.Seconds = 0
	}
	return s, true
}

// sliceWrite is the time of the EndpointSlice controller's last write of sl (else of any manager's).
func sliceWrite(sl *discoveryv1.EndpointSlice) time.Time {
	var own, latest time.Time
	for _, m := range sl.ManagedFields {
		if m.Time == nil {
			continue
		}
		if m.Manager == endpointSliceManager && m.Time.After(own) {
			own = m.Time.Time
		}
		if m.Time.After(latest) {
			latest = m.Time.Time
		}
	}
	if !own.IsZero() {
		return own
	}
	return latest
}

// dnsStep says, for a pod with a hostname and a subdomain behind a headless Service of that name (case A),
// that its name's resolvability is not measured here.
func dnsStep(p *corev1.Pod, net Network) (result.Step, bool) {
	if p.Spec.Hostname == "" || p.Spec.Subdomain == "" {
		return result.Step{}, false
	}
	for _, s := range net.Services {
		if s.Name == p.Spec.Subdomain && s.Namespace == p.Namespace && s.Spec.ClusterIP == corev1.ClusterIPNone {
			name := fmt.Sprintf("%s.%s.%s.svc", p.Spec.Hostname, p.Spec.Subdomain, p.Namespace)
			return result.Step{Name: StepDNS, Status: result.StepNotMeasured, Precision: result.PrecisionSecond,
				Source:  "not read: resolving needs a query from inside the cluster",
				Details: map[string]string{"name": name, "service": s.Name},
				Note: "when " + name + " became resolvable is not kept by the cluster; kubeslow explain creates nothing to ask. " +
					"`kubeslow bench job` (a whole Indexed Job) and `kubeslow bench dns` (dns.readiness) measure Ready → resolvable"}, true
		}
	}
	return result.Step{}, false
}

// dnsMember is a pod with a per-pod DNS name (case A) as dnsCauses reads it.
type dnsMember struct {
	pod            *corev1.Pod
	ready, started time.Time
}

// firstStart is the earliest start of p's containers (zero: none started): from then on it can ask for names.
func firstStart(p *corev1.Pod) time.Time {
	var first time.Time
	for _, cs := range p.Status.ContainerStatuses {
		t := startedAt(cs)
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// dnsCauses reads case A across the pods explained together (a Job's members): for each pod with a dns step,
// how long a peer of the same subdomain ran before the pod was Ready — its lookups of the pod's name could
// then only get NXDOMAIN, which resolvers cache — and, when the pod was the last of them to become Ready (so
// that the slice's last write can be its), how long after Ready its name was in the headless Service's
// EndpointSlice. It fills the dns steps' values (the step stays not-measured: when the name became
// resolvable is kept nowhere) and gives a KS-EXPLAIN-DNS cause per pod whose name was missing 1 s or more
// while a peer ran, or published 2 s or more after Ready.
func dnsCauses(in []corev1.Pod, pts []result.PodTimeline) []cause {
	groups := map[string][]dnsMember{}
	for i := range in {
		p := &in[i]
		if p.Spec.Hostname == "" || p.Spec.Subdomain == "" {
			continue
		}
		k := p.Namespace + "/" + p.Spec.Subdomain
		groups[k] = append(groups[k], dnsMember{pod: p, ready: kube.PodTrueSince(p, corev1.PodReady), started: firstStart(p)})
	}
	byName := map[string]*result.PodTimeline{}
	for i := range pts {
		byName[pts[i].Name] = &pts[i]
	}
	var out []cause
	for _, k := range sortedKeys(groups) {
		g := groups[k]
		for _, m := range g {
			pt := byName[m.pod.Name]
			if pt == nil || m.ready.IsZero() {
				continue
			}
			var dns, eps *result.Step
			for j := range pt.Steps {
				switch pt.Steps[j].Name {
				case StepDNS:
					dns = &pt.Steps[j]
				case StepEndpoints:
					eps = &pt.Steps[j]
				}
			}
			if dns == nil {
				continue
			}
			// The peer that could ask first, and whether any peer became Ready after this pod.
			var peer string
			var from time.Time
			last := true
			for _, o := range g {
				if o.pod == m.pod {
					continue
				}
				if !o.started.IsZero() && (from.IsZero() || o.started.Before(from)) {
					from, peer = o.started, o.pod.Name
				}
				if o.ready.After(m.ready) {
					last = false
				}
			}
			if dns.Values == nil {
				dns.Values = map[string]float64{}
			}
			exposure := 0.0
			if peer != "" {
				exposure = seconds(from, m.ready)
				dns.Values["peer_running_before_ready_seconds"] = exposure
				dns.Details["earliest_peer"] = peer
			}
			published, pubKnown := 0.0, false
			if eps != nil && eps.Status == result.StepDone && eps.Details["service"] == m.pod.Spec.Subdomain && last {
				published, pubKnown = eps.Seconds, true
				dns.Values["ready_to_endpointslice_seconds"] = published
			}
			var parts, facts []string
			if peer != "" {
				facts = append(facts, fmt.Sprintf("peer %s started %s before this pod was Ready", peer, secs(exposure)))
			}
			switch {
			case pubKnown:
				facts = append(facts, fmt.Sprintf("the name was in the EndpointSlice at most %s after Ready", secs(published)))
			case eps != nil && eps.Status == result.StepDone:
				facts = append(facts, "a peer became Ready later, so the slice's last write may be the peer's: this name was published after Ready, by then")
			}
			if len(facts) > 0 {
				dns.Note = "inferred from the pods and the EndpointSlice: " + strings.Join(facts, "; ") + ". " + dns.Note
			}
			if exposure >= MinPhaseSeconds {
				parts = append(parts, fmt.Sprintf("peer %s had been running %s when %s became Ready (its lookups of the name until then could only get NXDOMAIN)",
					peer, secs(exposure), m.pod.Name))
			}
			if pubKnown && published >= MinLongestSeconds {
				parts = append(parts, fmt.Sprintf("the name was in Service %s's EndpointSlice at most %s after the pod was Ready (the slice's last write; no name resolves before it)",
					m.pod.Spec.Subdomain, secs(published)))
			} else {
				published = 0
			}
			if len(parts) == 0 {
				continue
			}
			window := exposure + published
			name := dns.Details["name"]
			out = append(out, cause{phase: StepDNS, pod: m.pod.Name, seconds: window, f: result.Finding{
				ID: IDDNS, Severity: severityFor(window),
				Title: "The pod's DNS name did not exist yet while its peers ran (case A): a cached NXDOMAIN may have held their lookups",
				Summary: fmt.Sprintf("%s (%s): %s; a lookup made before the name existed gets NXDOMAIN, which resolvers keep for their negative TTL "+
					"(CoreDNS's cache denial setting, the kubernetes plugin's 5 s SOA TTL by default; the client's own cache), so the name can stay "+
					"unresolvable up to that TTL after it is published: when it became resolvable the cluster does not keep", m.pod.Name, name, strings.Join(parts, "; ")),
				Evidence: []result.Evidence{ev("dns_exposure_seconds", window, "seconds", m.pod.Name, StepDNS),
					ev("peer_running_before_ready_seconds", exposure, "seconds", m.pod.Name, StepDNS),
					ev("ready_to_endpointslice_seconds", published, "seconds", m.pod.Name, StepEndpoints)},
				Threshold: result.Threshold{Op: ">=", Value: MinPhaseSeconds, Unit: "seconds", Source: "the pods' containers' startedAt and Ready condition (1 s) and the headless " +
					"Service's EndpointSlice's last write (managedFields, 1 s, an upper bound): a peer running 1 s or more before the pod was Ready, or the name " +
					"published 2 s or more after it (counted only for the last pod to become Ready, whose publication the write can be); the negative cache's hold is not measured"},
				Remediation: "Let the members ask for their peers' names only once the peers exist (an init container or a rendezvous that waits until the Job's pods " +
					"all run), lower CoreDNS's negative TTL (cache { denial … }) and the clients' back-off cap; `kubeslow bench job` measures Ready → resolvable and " +
					"the back-off's extra wait on this cluster.",
			}})
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
