package cpnodetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
)

// Stub is a node tier for unit tests (measure.Env.NodeTier): the agents' answers are given, each read returns
// the next one (the last again once they run out).
type Stub struct {
	// Err, when set, is what starting the tier fails with.
	Err error
	// On are the nodes with an agent.
	On []string
	// Reads are the successive answers of ControlPlane.
	Reads [][]cpnode.Component
	// Metrics are the successive /metrics bodies by node and component ("node/component"); a missing key is
	// not served.
	Metrics map[string][][]byte
	// AuditPath and Audit are the audit log's file and its content written after the start, by node.
	AuditPath string
	Audit     map[string][]byte

	mu      sync.Mutex
	reads   int
	scrapes map[string]int
	Starts  int
	Closed  bool
}

// Tier implements cpnode.Source.
func (s *Stub) Tier(context.Context, *measure.Env) (cpnode.Tier, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Starts++
	if s.Err != nil {
		return nil, s.Err
	}
	return s, nil
}

// Close implements measure.NodeTier.
func (s *Stub) Close(context.Context) { s.Closed = true }

// Nodes implements cpnode.Tier.
func (s *Stub) Nodes() []string { return s.On }

// ControlPlane implements cpnode.Tier.
func (s *Stub) ControlPlane(context.Context) ([]cpnode.Component, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Reads) == 0 {
		return nil, &cpnode.Unreachable{Reason: cpnode.NoComponents, Detail: "stub: none"}
	}
	r := s.Reads[min(s.reads, len(s.Reads)-1)]
	s.reads++
	return r, nil
}

// Scrape implements cpnode.Tier.
func (s *Stub) Scrape(_ context.Context, node, comp string) (agentproto.Scraped, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := node + "/" + comp
	bodies := s.Metrics[k]
	if len(bodies) == 0 {
		return agentproto.Scraped{}, &cpnode.Unreachable{Reason: cpnode.NotServed, Detail: k + ": no such process"}
	}
	if s.scrapes == nil {
		s.scrapes = map[string]int{}
	}
	b := bodies[min(s.scrapes[k], len(bodies)-1)]
	s.scrapes[k]++
	return agentproto.Scraped{ScrapeHeader: agent.ScrapeHeader{Node: node, Component: comp, URL: "http://127.0.0.1:2381/metrics", Status: 200, Bytes: len(b)}, Body: b}, nil
}

// AuditLog implements cpnode.Tier: offset 0 is the log's end at the start; the content follows it.
func (s *Stub) AuditLog(_ context.Context, node string, cur agent.AuditCursor, maxBytes int64) (agentproto.AuditChunk, error) {
	data, ok := s.Audit[node]
	if !ok {
		return agentproto.AuditChunk{}, &cpnode.Unreachable{Reason: cpnode.NotServed, Detail: fmt.Sprintf("audit log on %s: audit off", node)}
	}
	h := agent.AuditHeader{Node: node, Path: s.AuditPath, From: cur, Files: []agent.AuditFile{{Name: s.AuditPath, Active: true}}}
	end := min(int64(len(data)), cur.Offset+maxBytes)
	// whole lines only
	for end > cur.Offset && end < int64(len(data)) && data[end-1] != '\n' {
		end--
	}
	h.Next = agent.AuditCursor{File: s.AuditPath, Offset: end}
	h.EOF = end == int64(len(data))
	return agentproto.AuditChunk{AuditHeader: h, Data: data[cur.Offset:end]}, nil
}

// ReadAudit implements cpnode.Tier as the Session does.
func (s *Stub) ReadAudit(ctx context.Context, node string, cur agent.AuditCursor, chunk, maxTotal int64, fn func([]byte) error) (agent.AuditCursor, bool, error) {
	var total int64
	for total < maxTotal {
		ch, err := s.AuditLog(ctx, node, cur, min(chunk, maxTotal-total))
		if err != nil {
			return cur, false, err
		}
		if len(ch.Data) > 0 {
			if err := fn(ch.Data); err != nil {
				return cur, false, err
			}
		}
		total += int64(len(ch.Data))
		progressed := ch.Next != cur
		cur = ch.Next
		if ch.EOF || !progressed {
			break
		}
	}
	return cur, false, nil
}
