package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Scraping the control plane's own /metrics from its node: etcd on its --listen-metrics-urls (kubeadm, k3s
// and rke2 default to http://127.0.0.1:2381), kube-controller-manager and kube-scheduler on their secure
// ports (10257, 10259; kubeadm binds them to 127.0.0.1), which only a host-network pod on the node reaches.

// DefaultTokenFile is where the kubelet mounts a pod's service-account token.
const DefaultTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// ScrapeHeader is the first line of `agent cp-scrape`'s output; the body follows it.
type ScrapeHeader struct {
	Node      string `json:"node,omitempty"`
	Component string `json:"component"`
	PID       int    `json:"pid,omitempty"`
	URL       string `json:"url,omitempty"`
	// Status is the HTTP status (0: no answer; Reason says why).
	Status int `json:"status"`
	// Bytes is the body's length as sent; Truncated is set when the body was cut at the size bound.
	Bytes     int    `json:"bytes"`
	Truncated bool   `json:"truncated,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Took is the scrape's duration in seconds.
	Took float64 `json:"took_seconds"`
}

// MetricsURL is where a component serves /metrics as its flags say, from its own node: etcd's first
// http(s) --listen-metrics-urls (its client URLs need a client certificate, so without that flag there is
// none), kube-controller-manager's and kube-scheduler's --bind-address:--secure-port. A wildcard address
// is reached on 127.0.0.1. A k3s/rke2 server passes them through as "<component>:<flag>" and defaults to
// the kubeadm ports.
func MetricsURL(c *Component, comp string) (string, error) {
	switch comp {
	case CompEtcd:
		v, ok := c.FlagOf(comp, "listen-metrics-urls")
		if !ok && (c.Name == CompK3s || c.Name == CompRKE2) {
			v, ok = "http://127.0.0.1:2381", true
		}
		if !ok || v == "" {
			return "", fmt.Errorf("etcd has no --listen-metrics-urls: its /metrics is served only on its client port, which needs a client certificate (kubeadm sets --listen-metrics-urls=http://127.0.0.1:2381)")
		}
		for _, u := range strings.Split(v, ",") {
			pu, err := url.Parse(strings.TrimSpace(u))
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
				continue
			}
			pu.Host = loopbackIfWildcard(pu.Host)
			pu.Path = "/metrics"
			return pu.String(), nil
		}
		return "", fmt.Errorf("etcd --listen-metrics-urls=%q has no http(s) URL", v)
	case CompController, CompScheduler:
		port := map[string]string{CompController: "10257", CompScheduler: "10259"}[comp]
		if v, ok := c.FlagOf(comp, "secure-port"); ok {
			if v == "0" {
				return "", fmt.Errorf("%s has --secure-port=0: it serves no metrics", comp)
			}
			port = v
		}
		host := "0.0.0.0"
		if v, ok := c.FlagOf(comp, "bind-address"); ok && v != "" {
			host = v
		}
		return "https://" + loopbackIfWildcard(net.JoinHostPort(host, port)) + "/metrics", nil
	}
	return "", fmt.Errorf("no metrics scrape for %q from the node (kube-apiserver's /metrics is read through the API)", comp)
}

func loopbackIfWildcard(hostport string) string {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	if h == "" || h == "0.0.0.0" || h == "::" {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, p)
}

// ScrapeOptions bound a scrape.
type ScrapeOptions struct {
	// MaxBytes is the largest body returned (the rest is cut and Truncated set).
	MaxBytes int64
	Timeout  time.Duration
	// TokenFile holds the bearer token sent to https endpoints ("" or missing: none).
	TokenFile string
}

// Scrape GETs url and returns at most MaxBytes of its body. An https endpoint gets the service account's
// token; its certificate is not verified: kube-controller-manager and kube-scheduler serve a self-signed
// certificate made at start-up unless given one, so there is no CA to verify it by, and the connection
// goes to the node's own loopback or address, taken from the component's flags.
func Scrape(ctx context.Context, h *ScrapeHeader, rawURL string, o ScrapeOptions) ([]byte, error) {
	h.URL = rawURL
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed serving certificates: see above
	defer tr.CloseIdleConnections()
	if strings.HasPrefix(rawURL, "https:") && o.TokenFile != "" {
		if tok, err := os.ReadFile(o.TokenFile); err == nil {
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		} else {
			h.Reason = fmt.Sprintf("no service-account token (%v); scraping without one", err)
		}
	}
	start := time.Now()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		h.Took = time.Since(start).Seconds()
		return nil, err
	}
	defer resp.Body.Close()
	h.Status = resp.StatusCode
	body, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	h.Took = time.Since(start).Seconds()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rawURL, err)
	}
	if int64(len(body)) > o.MaxBytes {
		body, h.Truncated = body[:o.MaxBytes], true
	}
	h.Bytes = len(body)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body[:min(len(body), 300)]))
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			h.Reason = fmt.Sprintf("%s answered %d (%s): the agent's service account needs \"get\" on the non-resource URL /metrics, e.g. a ClusterRoleBinding to the ClusterRole system:monitoring", rawURL, resp.StatusCode, msg)
		default:
			h.Reason = fmt.Sprintf("%s answered %d: %s", rawURL, resp.StatusCode, msg)
		}
	}
	return body, nil
}
