package connect

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// FlowStore keeps the records of the flows under way where every replica
// finds them: redisshare's FlowStore, on Redis, whose methods' contracts
// these are. Records are opaque to it; it seals them.
type FlowStore interface {
	Add(ctx context.Context, principal, id string, record []byte, now, expires time.Time, most, mostOf int) (stored bool, ended [][]byte, err error)
	Flow(ctx context.Context, id string) ([]byte, error)
	AddAttempt(ctx context.Context, id, state string, record []byte, now time.Time, keep int) (bool, error)
	Bind(ctx context.Context, id, state string, record []byte, now time.Time) (bool, error)
	Take(ctx context.Context, state string) ([]byte, error)
	End(ctx context.Context, principal, id string) ([]byte, error)
}

// flowRecord is a flow as a FlowStore keeps it.
type flowRecord struct {
	ID          string `json:"id"`
	Elicitation string `json:"e"`
	Principal   string `json:"p"`
	Issuer      string `json:"i"`
	Sub         string `json:"s"`
	Upstream    string `json:"u"`
	Expires     int64  `json:"x"` // Unix ms
}

// attemptRecord is an attempt as a FlowStore keeps it, under its state.
type attemptRecord struct {
	Flow     string `json:"f"`
	Verifier string `json:"v"`
	Nonce    string `json:"n,omitempty"`
	Cookie   string `json:"c"`
	Upstream bool   `json:"u,omitempty"`
}

// sharedFlows is the flowTable of every replica sharing a FlowStore: a
// link made on one opens on any, each step of its browser lands on any,
// and a state is taken once over all of them. The flows made here are
// also in local, for what only this replica holds: the caller's session
// (told notifications/elicitation/complete) and the call that waits.
type sharedFlows struct {
	store        FlowStore
	local        *pending // no ended: the store tells how a flow ended
	ttl          time.Duration
	most, mostOf int
	known        func(upstream string) bool
	ended        func(f *flow, why string)
	log          *slog.Logger
}

func (s *sharedFlows) add(ctx context.Context, f *flow, now time.Time) (bool, error) {
	f.start(now, s.ttl)
	rec, _ := json.Marshal(flowRecord{
		ID: f.id, Elicitation: f.elicitation, Principal: f.principal, Issuer: f.issuer, Sub: f.sub,
		Upstream: f.upstream, Expires: f.expires.UnixMilli(),
	})
	stored, ended, err := s.store.Add(ctx, f.principal, f.id, rec, now, f.expires, s.most, s.mostOf)
	for _, e := range ended {
		if g := s.decodeFlow(e); g != nil {
			s.ended(g, "expired")
		}
	}
	if err != nil || !stored {
		return false, err
	}
	s.local.add(f, now) // when full of flows ended elsewhere, f is not held here: its waiting call polls the vault
	return true, nil
}

// decodeFlow returns the flow of rec, nil when it is not one of an
// upstream of this replica.
func (s *sharedFlows) decodeFlow(rec []byte) *flow {
	var r flowRecord
	if json.Unmarshal(rec, &r) != nil || !s.known(r.Upstream) || r.ID == "" || r.Principal == "" {
		return nil
	}
	return &flow{
		id: r.ID, elicitation: r.Elicitation, principal: r.Principal, issuer: r.Issuer, sub: r.Sub,
		upstream: r.Upstream, expires: time.UnixMilli(r.Expires), done: make(chan struct{}),
	}
}

// flowOf returns the flow id live at now: this replica's own when it
// made it, else the store's; nil when there is none.
func (s *sharedFlows) flowOf(ctx context.Context, id string, now time.Time) (*flow, error) {
	if f := s.local.get(id, now); f != nil {
		return f, nil
	}
	rec, err := s.store.Flow(ctx, id)
	if err != nil || rec == nil {
		return nil, err
	}
	f := s.decodeFlow(rec)
	if f == nil || f.id != id || !now.Before(f.expires) {
		return nil, nil
	}
	return f, nil
}

func (s *sharedFlows) keep(ctx context.Context, a *attempt, now time.Time, bind bool) (*attempt, error) {
	rec, _ := json.Marshal(attemptRecord{Flow: a.f.id, Verifier: a.verifier, Nonce: a.nonce, Cookie: a.cookie, Upstream: a.upstream})
	var ok bool
	var err error
	if bind {
		ok, err = s.store.Bind(ctx, a.f.id, a.state, rec, now)
	} else {
		ok, err = s.store.AddAttempt(ctx, a.f.id, a.state, rec, now, maxSignIns)
	}
	if err != nil || !ok {
		return nil, err
	}
	return a, nil
}

func (s *sharedFlows) signIn(ctx context.Context, id string, now time.Time) (*attempt, error) {
	f, err := s.flowOf(ctx, id, now)
	if f == nil {
		return nil, err
	}
	return s.keep(ctx, newAttempt(f, "", false), now, false)
}

func (s *sharedFlows) take(ctx context.Context, state string, now time.Time) (*attempt, error) {
	rec, err := s.store.Take(ctx, state)
	if err != nil || rec == nil {
		return nil, err
	}
	var r attemptRecord
	if json.Unmarshal(rec, &r) != nil {
		return nil, nil
	}
	f, err := s.flowOf(ctx, r.Flow, now)
	if f == nil {
		return nil, err
	}
	return &attempt{f: f, state: state, verifier: r.Verifier, nonce: r.Nonce, cookie: r.Cookie, upstream: r.Upstream}, nil
}

func (s *sharedFlows) authorize(ctx context.Context, a *attempt, now time.Time) (*attempt, error) {
	return s.keep(ctx, newAttempt(a.f, a.cookie, true), now, true)
}

// end ends f, counted as why by the one replica that removes it from the
// store.
func (s *sharedFlows) end(ctx context.Context, f *flow, why string) {
	if lf := s.local.get(f.id, time.Time{}); lf != nil {
		s.local.end(lf, why)
	}
	rec, err := s.store.End(context.WithoutCancel(ctx), f.principal, f.id)
	if err != nil {
		s.log.Warn("connect: a flow's end not stored: it stays until it expires", "upstream", f.upstream, "error", err)
		return
	}
	if rec != nil {
		s.ended(f, why)
	}
}
