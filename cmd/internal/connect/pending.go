package connect

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/vigil-mcp/vigil/server"
)

// maxSignIns bounds the sign-ins under way of one flow: each opening of
// its link starts one (a browser that opens the link again, another
// person's browser): the oldest is forgotten beyond it.
const maxSignIns = 4

// flow is one pending authorization of an upstream by a principal: made
// by a call that needed it, ended by its completion, its expiry, or its
// principal's newer flows pushing it out.
type flow struct {
	id          string // the link's, in /connect/{id}
	elicitation string // the elicitationId told to the client
	principal   string // the vault's key of the principal asked
	issuer, sub string // whom the browser must sign in as
	upstream    string
	session     *server.Session // told notifications/elicitation/complete; nil for a stateless caller
	expires     time.Time
	elem        *list.Element // in pending.order
	done        chan struct{} // closed when the flow ends, however
	// waiting is true while a call of the session waits for the flow
	// (after an elicitation/create it accepted): that call tells the
	// session notifications/elicitation/complete, on its own stream.
	waiting atomic.Bool

	signIns []*attempt // sign-ins under way, oldest first
	// set once the browser signed in as the principal: the upstream's
	// authorization under way, bound to that browser.
	authorizing *attempt
}

// attempt is one step of a flow bound to one browser: its state (the
// OAuth state parameter), the PKCE verifier, the OIDC nonce, and the
// cookie that browser holds.
type attempt struct {
	f        *flow
	state    string
	verifier string
	nonce    string
	cookie   string
	upstream bool // the upstream's authorization, not the sign-in
}

// cookieMatches reports whether v is a's cookie, in constant time.
func (a *attempt) cookieMatches(v string) bool {
	return v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(a.cookie)) == 1
}

// pending holds the flows under way, bounded per principal and in all,
// each expiring after ttl. Every key is one the gateway made (crypto/rand)
// or a verified principal's; nothing a client names becomes a key.
type pending struct {
	mu           sync.Mutex
	ttl          time.Duration
	most, mostOf int
	byID         map[string]*flow
	byState      map[string]*attempt
	of           map[string][]*flow // by principal, oldest first
	order        *list.List         // every flow, oldest first (expiry order: one ttl for all)
	ended        func(f *flow, why string)
}

func newPending(ttl time.Duration, most, mostOf int, ended func(*flow, string)) *pending {
	return &pending{
		ttl: ttl, most: most, mostOf: mostOf, ended: ended,
		byID: map[string]*flow{}, byState: map[string]*attempt{}, of: map[string][]*flow{}, order: list.New(),
	}
}

// newID returns an unguessable identifier: 128 bits and more of crypto/rand.
func newID() string { return rand.Text() }

// start gives f its link, its elicitationId and its expiry at now.
func (f *flow) start(now time.Time, ttl time.Duration) {
	f.id, f.elicitation, f.expires, f.done = newID(), newID(), now.Add(ttl), make(chan struct{})
}

// newAttempt returns a new attempt of f, of the sign-in or (upstream)
// of the upstream's authorization, bound to the browser of cookie ("": a
// new one).
func newAttempt(f *flow, cookie string, upstream bool) *attempt {
	if cookie == "" {
		cookie = newID()
	}
	a := &attempt{f: f, state: newID(), verifier: oauth2.GenerateVerifier(), cookie: cookie, upstream: upstream}
	if !upstream {
		a.nonce = newID()
	}
	return a
}

// flowTable keeps the flows under way: in this process ([localFlows]),
// or where every replica finds them ([sharedFlows], -redis). Its
// methods are pending's; an error means the shared store did not answer.
type flowTable interface {
	add(ctx context.Context, f *flow, now time.Time) (bool, error)
	signIn(ctx context.Context, id string, now time.Time) (*attempt, error)
	take(ctx context.Context, state string, now time.Time) (*attempt, error)
	authorize(ctx context.Context, a *attempt, now time.Time) (*attempt, error)
	end(ctx context.Context, f *flow, why string)
}

// localFlows is the flowTable of one replica.
type localFlows struct{ p *pending }

func (l localFlows) add(_ context.Context, f *flow, now time.Time) (bool, error) {
	return l.p.add(f, now), nil
}

func (l localFlows) signIn(_ context.Context, id string, now time.Time) (*attempt, error) {
	return l.p.signIn(id, now), nil
}

func (l localFlows) take(_ context.Context, state string, now time.Time) (*attempt, error) {
	return l.p.take(state, now), nil
}

func (l localFlows) authorize(_ context.Context, a *attempt, _ time.Time) (*attempt, error) {
	return l.p.authorize(a), nil
}

func (l localFlows) end(_ context.Context, f *flow, why string) { l.p.end(f, why) }

// add starts a flow of f.principal, at now (f.start'ed unless it was);
// false when every flow allowed
// in all is another principal's and under way. The principal's oldest flow
// makes room for its newest beyond mostOf.
func (p *pending) add(f *flow, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	if mine := p.of[f.principal]; len(mine) >= p.mostOf {
		p.removeLocked(mine[0], "expired")
	} else if len(p.byID) >= p.most {
		return false
	}
	if f.id == "" {
		f.start(now, p.ttl)
	}
	f.elem = p.order.PushBack(f)
	p.byID[f.id] = f
	p.of[f.principal] = append(p.of[f.principal], f)
	return true
}

// get returns the flow id, nil when there is none or it expired at now
// (the zero now: whenever it expires).
func (p *pending) get(id string, now time.Time) *flow {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.byID[id]
	if f == nil || (!now.IsZero() && !now.Before(f.expires)) {
		return nil
	}
	return f
}

// expireLocked ends the flows expired at now.
func (p *pending) expireLocked(now time.Time) {
	for e := p.order.Front(); e != nil; e = p.order.Front() {
		f := e.Value.(*flow)
		if now.Before(f.expires) {
			return
		}
		p.removeLocked(f, "expired")
	}
}

// removeLocked forgets f and its attempts, and tells why it ended.
func (p *pending) removeLocked(f *flow, why string) {
	if p.byID[f.id] != f {
		return
	}
	delete(p.byID, f.id)
	p.order.Remove(f.elem)
	for _, a := range f.signIns {
		delete(p.byState, a.state)
	}
	if f.authorizing != nil {
		delete(p.byState, f.authorizing.state)
	}
	mine := p.of[f.principal]
	for i, g := range mine {
		if g == f {
			mine = append(mine[:i:i], mine[i+1:]...)
			break
		}
	}
	if len(mine) == 0 {
		delete(p.of, f.principal)
	} else {
		p.of[f.principal] = mine
	}
	close(f.done)
	if p.ended != nil {
		p.ended(f, why)
	}
}

// signIn starts a sign-in of the flow of link id at now: a new attempt,
// or nil when the link is unknown, expired, done, or already bound to the
// browser that signed in as its principal.
func (p *pending) signIn(id string, now time.Time) *attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	f := p.byID[id]
	if f == nil || f.authorizing != nil {
		return nil
	}
	a := newAttempt(f, "", false)
	if len(f.signIns) >= maxSignIns {
		delete(p.byState, f.signIns[0].state)
		f.signIns = f.signIns[1:]
	}
	f.signIns = append(f.signIns, a)
	p.byState[a.state] = a
	return a
}

// take returns the attempt of state and forgets it (a state is used
// once, whatever follows), nil when unknown or expired; a flow of whose
// stays pending.
func (p *pending) take(state string, now time.Time) *attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	a := p.byState[state]
	if a == nil {
		return nil
	}
	delete(p.byState, state)
	f := a.f
	if f.authorizing == a {
		f.authorizing = nil
	}
	for i, s := range f.signIns {
		if s == a {
			f.signIns = append(f.signIns[:i:i], f.signIns[i+1:]...)
			break
		}
	}
	return a
}

// authorize binds a's flow to a's browser, which signed in as its
// principal: its other sign-ins end, and the upstream's authorization
// starts with a new attempt; nil when the flow ended meanwhile.
func (p *pending) authorize(a *attempt) *attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := a.f
	if p.byID[f.id] != f || f.authorizing != nil {
		return nil
	}
	for _, s := range f.signIns {
		delete(p.byState, s.state)
	}
	f.signIns = nil
	next := newAttempt(f, a.cookie, true)
	f.authorizing = next
	p.byState[next.state] = next
	return next
}

// end forgets f, which ended for why.
func (p *pending) end(f *flow, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(f, why)
}

// len returns the flows under way, and the principals that hold one.
func (p *pending) len() (flows, principals int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byID), len(p.of)
}
