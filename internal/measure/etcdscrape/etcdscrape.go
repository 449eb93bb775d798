// Package etcdscrape is the one reader of etcd's /metrics, which etcd.health and controlplane.usage share: over
// HTTP at the endpoint the user gave (--etcd-endpoint), or through the node agent on a control-plane node
// (etcd's 127.0.0.1:2381 there), each through the run's shared scrapes (measure.ScrapeEtcdAt,
// measure.ScrapeEtcdOn), so one step reads etcd once whichever measurement asks first. What each makes of a
// failed read is its own: etcd.health skips, controlplane.usage goes on without etcd.
package etcdscrape

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// Fetch reads etcd's /metrics once.
type Fetch func(ctx context.Context) (*prom.Snapshot, error)

// At reads etcd's /metrics at ep, the endpoint as the user gave it without its trailing slash, with c; an
// endpoint that does not answer is a Skip ("etcd metrics endpoint … unreachable").
func At(env *measure.Env, c *http.Client, ep string) Fetch {
	return func(ctx context.Context) (*prom.Snapshot, error) {
		return env.Scrape(ctx, measure.ScrapeEtcdAt(ep), func(ctx context.Context) (*prom.Snapshot, error) {
			s, err := prom.Fetch(ctx, c, ep+"/metrics", env.Clock.Now)
			if u := (*prom.Unreachable)(nil); errors.As(err, &u) {
				return nil, measure.Skipf("etcd metrics endpoint %s unreachable: %v", ep, u.Err)
			}
			return s, err
		})
	}
}

// On reads etcd's /metrics on node through the tier's agent there.
func On(env *measure.Env, tier cpnode.Tier, node string) Fetch {
	return func(ctx context.Context) (*prom.Snapshot, error) {
		return env.Scrape(ctx, measure.ScrapeEtcdOn(node), func(ctx context.Context) (*prom.Snapshot, error) {
			sc, err := tier.Scrape(ctx, node, agent.CompEtcd)
			if err != nil {
				return nil, err
			}
			return prom.Parse(bytes.NewReader(sc.Body), env.Clock.Now())
		})
	}
}

// Find is the first of the tier's nodes whose agent scrapes etcd, with that scrape; the error is the last
// node's when none does.
func Find(ctx context.Context, tier cpnode.Tier) (string, agentproto.Scraped, error) {
	var err error = &cpnode.Unreachable{Reason: cpnode.NoComponents, Detail: "no agent on a control-plane node"}
	for _, n := range tier.Nodes() {
		sc, e := tier.Scrape(ctx, n, agent.CompEtcd)
		if e == nil {
			return n, sc, nil
		}
		err = e
	}
	return "", agentproto.Scraped{}, err
}
