package cpnode

import (
	"context"
	"errors"
	"sync"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Tier is what the measurements ask of the node tier: a *Session (tests stub it).
type Tier interface {
	// Nodes are the nodes with a running agent.
	Nodes() []string
	ControlPlane(ctx context.Context) ([]Component, error)
	Scrape(ctx context.Context, node, comp string) (agentproto.Scraped, error)
	AuditLog(ctx context.Context, node string, cur agent.AuditCursor, maxBytes int64) (agentproto.AuditChunk, error)
	ReadAudit(ctx context.Context, node string, cur agent.AuditCursor, chunk, maxTotal int64, fn func([]byte) error) (agent.AuditCursor, bool, error)
}

// Source is a run's node tier as measure.Env holds it: Tier starts it on first use.
type Source interface {
	measure.NodeTier
	Tier(ctx context.Context, env *measure.Env) (Tier, error)
}

// Shared is the run's one Session, started on first use by whichever measurement asks first and shared by
// the others; the runner closes it at the end of the run (measure.Env.NodeTier).
type Shared struct {
	opts  Options
	start func(ctx context.Context, env *measure.Env, o Options) (*Session, error)

	mu   sync.Mutex
	done bool
	s    *Session
	err  error
}

// NewShared returns the run's node tier with o; nothing is deployed until a measurement asks.
func NewShared(o Options) *Shared { return &Shared{opts: o, start: Start} }

// Tier starts the session once (a start cut short by its caller's context is tried again by the next caller)
// and returns it, or the node tier's reason for being out of reach.
func (sh *Shared) Tier(ctx context.Context, env *measure.Env) (Tier, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.done {
		s, err := sh.start(ctx, env, sh.opts)
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err
		}
		sh.s, sh.err, sh.done = s, err, true
		if err == nil {
			env.Log.Info("control-plane node tier started", "nodes", s.Nodes(), "missing", s.Missing())
		}
	}
	if sh.err != nil {
		return nil, sh.err
	}
	return sh.s, nil
}

// Close removes the agents (if they were started).
func (sh *Shared) Close(ctx context.Context) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.s != nil {
		sh.s.Close(ctx)
		sh.s = nil
	}
	sh.done, sh.err = true, &Unreachable{Reason: NotRunning, Detail: "the run's node tier is closed"}
}

// From is env's node tier, or why it is out of reach (an *Unreachable, or the error of starting it).
func From(ctx context.Context, env *measure.Env) (Tier, error) {
	src, ok := env.NodeTier.(Source)
	if !ok {
		why := env.NodeTierOff
		if why == "" {
			why = "this run has no node tier"
		}
		return nil, &Unreachable{Reason: NotRunning, Detail: why}
	}
	return src.Tier(ctx, env)
}

// Why is the text of a node-tier error for an out-of-reach entry: the node tier's reason and detail, and its
// fix when it has one.
func Why(err error) string {
	if u, ok := IsUnreachable(err); ok {
		return "the node tier is out of reach: " + u.Error()
	}
	return "the node tier failed: " + err.Error()
}

// SourceNodeAgent is the value of the label "source" on what the node tier read.
const SourceNodeAgent = "node-agent"

// OutOfReach is base (a signal the API tier cannot give) with the node tier's reason added to its why, and
// its fix first where it has one.
func OutOfReach(base result.OutOfReach, err error) result.OutOfReach {
	base.Why += "; " + Why(err)
	return base
}
