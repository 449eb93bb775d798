package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

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
