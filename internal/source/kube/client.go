// Package kube holds kubeslow's cluster access: clients, run labels and the cleanup of what kubeslow created.
package kube

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ClientOptions select the cluster and bound the client's request rate.
type ClientOptions struct {
	Kubeconfig string
	Context    string
	// QPS and Burst bound kubeslow's own request rate to the apiserver (client-side).
	QPS   float32
	Burst int
}

// Cluster is a connected cluster.
type Cluster struct {
	Config  *rest.Config
	Client  kubernetes.Interface
	Context string
	// Requests counts every request sent through Config and Client.
	Requests *RequestCounter
	// Backoff is the client-side rate limiter every request through Config and Client waits on (AIMD on
	// 429s and slow responses), with its counts of the responses by status code.
	Backoff *Backoff
}

// Connect loads the kubeconfig (explicit path, $KUBECONFIG, ~/.kube/config, or in-cluster) and builds a client.
// It reports a malformed kubeconfig plainly; reachability is checked by the caller with a request.
func Connect(o ClientOptions) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
		}
		rules.ExplicitPath = o.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no kubeconfig found: pass --kubeconfig, set $KUBECONFIG, or use --lab for the local lab")
		}
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	raw, err := cc.RawConfig()
	ctxName := o.Context
	if err == nil && ctxName == "" {
		ctxName = raw.CurrentContext
	}
	return FromConfig(cfg, ctxName, o.QPS, o.Burst)
}

// FromConfig builds kubeslow's client from a REST config (a copy of it is changed): its own user agent, the
// client-side rate limit (qps and burst when > 0; AIMD below it, see Backoff), and the request counter.
func FromConfig(base *rest.Config, name string, qps float32, burst int) (*Cluster, error) {
	cfg := rest.CopyConfig(base)
	if qps > 0 {
		cfg.QPS = qps
	}
	if burst > 0 {
		cfg.Burst = burst
	}
	cfg.UserAgent = "kubeslow"
	reqs := &RequestCounter{}
	cfg.Wrap(reqs.Wrap)
	// One limiter for every client made from cfg (rest.CopyConfig keeps the pointer): reads, load and
	// cleanup all yield together when the apiserver pushes back.
	q, b := cfg.QPS, cfg.Burst
	if q == 0 { // client-go's defaults when unset
		q, b = rest.DefaultQPS, rest.DefaultBurst
	} else if q < 0 { // no client-side limit asked for: AIMD still cuts it under 429s
		q = 1e6
	}
	bo := NewBackoff(q, b)
	cfg.RateLimiter = bo
	cfg.Wrap(bo.Wrap)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	return &Cluster{Config: cfg, Client: client, Context: name, Requests: reqs, Backoff: bo}, nil
}
