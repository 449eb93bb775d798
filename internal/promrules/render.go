package promrules

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Formats are the formats Render writes.
var Formats = []string{"prometheus", "prometheus-operator", "alertmanager-inhibit"}

// PrometheusRule is a monitoring.coreos.com/v1 PrometheusRule (prometheus-operator).
type PrometheusRule struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       RuleFile `json:"spec"`
}

// Metadata is the object's metadata.
type Metadata struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// InhibitConfig is the inhibit_rules section of alertmanager.yml.
type InhibitConfig struct {
	InhibitRules []Inhibit `json:"inhibit_rules"`
}

// RenderOptions are the object's name and namespace (prometheus-operator) and the header's first line.
type RenderOptions struct {
	Name, Namespace, Generator string
}

// Render writes out in format: a YAML document headed by a comment that lists the rules not exported and why.
func Render(out Output, format string, o RenderOptions) ([]byte, error) {
	var doc any
	switch format {
	case "prometheus":
		doc = out.File
	case "prometheus-operator":
		doc = PrometheusRule{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule",
			Metadata: Metadata{Name: o.Name, Namespace: o.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "kubeslow"}},
			Spec:     out.File}
	case "alertmanager-inhibit":
		doc = InhibitConfig{InhibitRules: out.Inhibit}
	default:
		return nil, fmt.Errorf("unknown format %q (one of %s)", format, strings.Join(Formats, ", "))
	}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append([]byte(Header(out, format, o.Generator)), body...), nil
}

// Header is the comment above the document: what it is, what is exported, and what is not and why.
func Header(out Output, format, generator string) string {
	var b strings.Builder
	line := func(f string, a ...any) { b.WriteString(strings.TrimSpace("# "+fmt.Sprintf(f, a...)) + "\n") }
	line("%s", generator)
	switch format {
	case "alertmanager-inhibit":
		line("Alertmanager inhibit_rules: merge into alertmanager.yml. A symptom alert is muted while an alert of its")
		line("cause fires (kubeslow's ExplainedBy links, matched on the id label; equal on cluster). See docs/alerts.md.")
	default:
		line("Prometheus alerting rules of kubeslow's rules (%d exported) and SLO burn-rate alerts. See docs/alerts.md.", len(out.Exported))
	}
	if len(out.Skipped) > 0 {
		line("")
		line("Not exported (their inputs are not Prometheus series):")
		for _, s := range out.Skipped {
			line("  %s: %s", s.ID, s.Reason)
		}
	}
	return b.String()
}
