package measure

import (
	"context"
	"fmt"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Permission is one thing a measurement asks of the API server, cluster-wide (a run's namespace is new each
// time, so namespaced rights must come from a ClusterRole), with the reason it is asked.
type Permission struct {
	Verbs []string
	// Group and Resource (e.g. "", "pods"; "apps", "deployments"; "", "nodes/proxy" for a subresource) or
	// NonResourceURL (e.g. "/metrics").
	Group          string
	Resource       string
	NonResourceURL string
	Reason         string
	// Optional is a permission the measurement uses where granted and does without (it says what it then
	// lacks): `kubeslow rbac` grants it, and a run's preflight does not skip the measurement for it.
	Optional bool
}

// String is the permission as a person reads it: "list nodes", "get /metrics".
func (p Permission) String() string {
	what := p.Resource
	if p.Group != "" {
		what += "." + p.Group
	}
	if p.NonResourceURL != "" {
		what = p.NonResourceURL
	}
	return strings.Join(p.Verbs, ",") + " " + what
}

// PermissionsOf returns m's permissions: its Spec's (SpecOf), none for a measurement no Spec declares.
// Measurements that read only outside the API (etcd's endpoint, an audit log file) need none.
func PermissionsOf(m Measurement) []Permission {
	if s, ok := SpecOf(m); ok {
		return s.Permissions
	}
	return nil
}

// Reviewer answers, for the identity of its client, whether permissions are granted (a
// SelfSubjectAccessReview per verb, each asked once).
type Reviewer struct {
	Client kubernetes.Interface
	seen   map[string]bool
}

// Denied returns the first of ps that is not granted (with that one verb), or nil. A review that cannot be
// made is an error (the caller then does not skip: the measurement finds out itself).
func (rv *Reviewer) Denied(ctx context.Context, ps []Permission) (*Permission, error) {
	if rv.seen == nil {
		rv.seen = map[string]bool{}
	}
	for i, p := range ps {
		if p.Optional {
			continue
		}
		for _, v := range p.Verbs {
			key := v + " " + p.Group + "/" + p.Resource + " " + p.NonResourceURL
			if ok, done := rv.seen[key]; done {
				if !ok {
					d := ps[i]
					d.Verbs = []string{v}
					return &d, nil
				}
				continue
			}
			spec := authv1.SelfSubjectAccessReviewSpec{}
			if p.NonResourceURL != "" {
				spec.NonResourceAttributes = &authv1.NonResourceAttributes{Path: p.NonResourceURL, Verb: v}
			} else {
				res, sub, _ := strings.Cut(p.Resource, "/") // "nodes/proxy": resource nodes, subresource proxy
				spec.ResourceAttributes = &authv1.ResourceAttributes{Verb: v, Group: p.Group, Resource: res, Subresource: sub}
			}
			r, err := rv.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("access review for %s: %w", p, err)
			}
			rv.seen[key] = r.Status.Allowed
			if !r.Status.Allowed {
				d := ps[i]
				d.Verbs = []string{v}
				return &d, nil
			}
		}
	}
	return nil, nil
}
