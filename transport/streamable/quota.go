package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/internal/quota"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Quotas are an Endpoint's limits per caller, so that no caller can take
// what the others need: the caller is the user of the principal (see
// [WithPrincipal]: its issuer and subject, so that one user's clients share
// its quotas) or, without one, the client's IP address, an IPv6 address by
// its /64 network (one host commonly owns a whole /64). A zero field keeps
// its default; a negative one means no limit.
type Quotas struct {
	// Sessions limits the concurrent 2025-era sessions of one caller
	// (1000 by default, a tenth of the session limit). Over it, an
	// initialize is refused with 429 and Retry-After, or, with EvictIdle,
	// the caller's session idle the longest (with no request in flight)
	// ends as the idle timeout ends sessions, to make room. With a
	// cluster ([WithCluster]), only a SessionCounter counts them (none by
	// default).
	Sessions  int
	EvictIdle bool
	// InFlight limits the requests one caller has in flight over HTTP, over
	// all of its sessions and its stateless requests (512 by default, twice
	// the per-session limit); more are refused with 429 and Retry-After.
	InFlight int
	// Bytes limits the bytes one caller holds at once over HTTP (16 MiB
	// by default): the body of each of its POSTs, counted at its declared
	// length (the body limit when it declares none, cut to the body's
	// size once read) from before it is read until the POST ends, and the
	// answers not yet written to it (those over 4 KiB, while they are
	// written; those queued on its GET streams, until written or
	// dropped; with an event store, which bounds what it keeps, its
	// events are not counted). A POST over it is refused with 429 and Retry-After before
	// its body is read; a body of at most 64 KiB is read first, and
	// refused with its id only if it is a request: an answer to the
	// server's elicitation or sampling request, which frees what the
	// caller holds, always gets through (counted).
	Bytes int64
	// MemoryBudget limits the bytes all callers hold at once, counted as
	// Bytes counts them: by default an eighth of the Go memory limit
	// (GOMEMLIMIT, debug.SetMemoryLimit) when one is set, else 256 MiB; a
	// held byte costs several in the heap while it is decoded, handled and
	// encoded again. A POST over it, whoever sends it, is refused with 503
	// and Retry-After before its body is read, counted as
	// [protocol.RejectMemoryBudget]: the process refuses new work rather
	// than outgrow its memory.
	MemoryBudget int64
	// SessionCounter, when set, counts the sessions instead of this
	// Endpoint's own table, for a count shared by replicas (redisshare's
	// Shared.SessionQuota); EvictIdle then has no effect.
	SessionCounter SessionCounter
	// OnRefuse, when set, is called for every refusal (and eviction) by a
	// quota, with its quota; it must be fast and safe for concurrent use.
	OnRefuse func(q protocol.Quota)
}

// The default quotas.
const (
	// defaultSessionsPerCaller is a tenth of the default session limit, so
	// that no fewer than ten callers can fill the Endpoint.
	defaultSessionsPerCaller = 1000
	// defaultInFlightPerCaller is twice the default per-session limit.
	defaultInFlightPerCaller = 512
	// defaultBytesPerCaller is four bodies of the default body limit, half
	// the budget of a 256 MiB memory limit: one caller leaves the others
	// room.
	defaultBytesPerCaller = 16 << 20
	// defaultMemoryBudget is the process's budget without a Go memory
	// limit, as a limit of 2 GiB would give; with one, an eighth of it
	// (memoryBudgetShare): a held body costs its bytes up to five times
	// over while it is decoded, handled and encoded again (a 3 MiB
	// argument echoed in an elicitation), on top of the process's heap.
	defaultMemoryBudget = 256 << 20
	memoryBudgetShare   = 8
	// smallBody is the size of a body the caller's byte quota counts but
	// never refuses.
	smallBody = 64 << 10
)

// Retry-After of quota refusals, in seconds: a request ends within
// seconds, a session lasts minutes.
const (
	retryInFlight = 1
	retrySessions = 10
)

// totalKey is the one key of quotaState.total.
const totalKey = ""

// WithQuotas sets the per-caller quotas (see [Quotas]); without it the
// defaults apply. A MemoryBudget of 0 is taken from the Go memory limit
// when WithQuotas is called, not when the endpoint is built: a tuner of
// the collector that lowers the limit meanwhile (cmd/vigil's) would
// otherwise leave the budget an eighth of its tuned limit.
func WithQuotas(q Quotas) Option {
	if q.MemoryBudget == 0 {
		q.MemoryBudget = defaultBudget()
	}
	return optionFunc(func(c *config) { c.quotas = q })
}

// quotaState is an Endpoint's per-caller accounting.
type quotaState struct {
	q        Quotas
	inFlight *quota.Counter // nil: no limit
	bytes    *quota.Counter // the body bytes each caller holds; nil: no limit
	total    *quota.Counter // the body bytes all callers hold, under totalKey; nil: no limit
	sessions int            // limit; 0: none
	// bySession counts the sessions of each caller that holds one, without
	// a SessionCounter. mu is never held with Endpoint.mu.
	mu        sync.Mutex
	bySession map[string]int
}

func newQuotaState(q Quotas) *quotaState {
	qs := &quotaState{q: q, bySession: make(map[string]int)}
	switch {
	case q.InFlight == 0:
		qs.inFlight = quota.New(defaultInFlightPerCaller)
	case q.InFlight > 0:
		qs.inFlight = quota.New(q.InFlight)
	}
	switch {
	case q.Bytes == 0:
		qs.bytes = quota.New(defaultBytesPerCaller)
	case q.Bytes > 0:
		qs.bytes = quota.New(int(q.Bytes))
	}
	switch {
	case q.MemoryBudget == 0:
		qs.total = quota.New(int(defaultBudget()))
	case q.MemoryBudget > 0:
		qs.total = quota.New(int(q.MemoryBudget))
	}
	switch {
	case q.Sessions == 0:
		qs.sessions = defaultSessionsPerCaller
	case q.Sessions > 0:
		qs.sessions = q.Sessions
	}
	return qs
}

// defaultBudget returns the process's memory budget by default: a share of
// the Go memory limit, when one is set.
func defaultBudget() int64 {
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		return max(limit/memoryBudgetShare, smallBody)
	}
	return defaultMemoryBudget
}

// bodyHold is the bytes a POST's body, or answers not written yet, hold
// of their caller's byte quota and of the process's budget.
type bodyHold struct {
	caller, total quota.Hold
	inFlight      quota.Hold // a request's unit of the in-flight quota, held with its body
	// over: a small body counted past the caller's quota; the request
	// it brings, if it is one, is to be refused once read.
	over bool
}

// admitBody counts the body of POST r, of caller, against the byte quotas
// into body (holdBody) and answers r when they refuse it, before it is
// read; false when it did. It runs in a frame apart from post's, which
// stands over the whole handler (docs/limits.md, "The request's stack").
//
//go:noinline
func (h *Endpoint) admitBody(w http.ResponseWriter, r *http.Request, caller string, body *bodyHold) bool {
	var why protocol.RejectReason
	switch *body, why = h.quotas.holdBody(caller, r, h.cfg.maxBody); why {
	case protocol.RejectOther:
		return true
	case protocol.RejectMemoryBudget:
		discardBody(r, h.cfg.maxBody)
		h.refuseMemory(w)
	default:
		discardBody(r, h.cfg.maxBody)
		h.refuseQuota(w, r, transport.ID{}, protocol.QuotaBytes, why, retryInFlight)
	}
	return false
}

// discardBody reads the body of r, refused before it was read, into
// nothing, up to limit bytes (within the server's body read timeout), so
// that a client still sending it reads the refusal and its Retry-After
// rather than a connection reset: a client that writes its whole body
// before it reads the answer sees its write fail once net/http closes a
// connection whose body was left unread. It holds no memory of the body
// (io.Discard reads through a small pooled buffer).
func discardBody(r *http.Request, limit int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, limit))
}

// refuseBytes refuses req, read from a small body past its caller's byte
// quota (bodyHold.over), with 429 as refuseQuota does.
//
//go:noinline
func (h *Endpoint) refuseBytes(w http.ResponseWriter, r *http.Request, req *transport.Request) {
	h.refuseQuota(w, r, req.ID, protocol.QuotaBytes, protocol.RejectInFlightLimit, retryInFlight)
}

// holdBody counts the body of POST r, of caller, against the byte quotas
// before it is read: its declared length, else the body limit. It answers
// RejectOther when admitted, else why not: RejectInFlightLimit over the
// caller's quota, RejectMemoryBudget over the process's budget. A small
// body over the caller's quota is admitted, marked over: an answer to the
// server's request must get through, a request must not.
func (qs *quotaState) holdBody(caller string, r *http.Request, limit int64) (bodyHold, protocol.RejectReason) {
	n := r.ContentLength
	if n < 0 || n > limit {
		n = limit
	}
	n = max(n, 1)
	var b bodyHold
	var ok bool
	if b.caller, ok = qs.bytes.AcquireN(caller, n); !ok {
		if n > smallBody {
			return bodyHold{}, protocol.RejectInFlightLimit
		}
		b.caller, b.over = qs.bytes.Force(caller, n), true
	}
	if b.total, ok = qs.total.AcquireN(totalKey, n); !ok {
		b.caller.Release()
		return bodyHold{}, protocol.RejectMemoryBudget
	}
	return b, protocol.RejectOther
}

// holdAnswer counts n bytes of an answer about to be written for caller,
// whatever the quotas (an answer is never refused: the caller's next
// request is), until the hold's release once it is written.
func (qs *quotaState) holdAnswer(caller string, n int) bodyHold {
	var b bodyHold
	qs.grow(&b, caller, n)
	return b
}

// grow counts n more bytes of answers for caller in b, as holdAnswer
// does; an unknown caller ("": a shared session's view on a replica that
// did not open it) counts in the process's budget only.
func (qs *quotaState) grow(b *bodyHold, caller string, n int) {
	if caller != "" {
		qs.bytes.Add(&b.caller, caller, int64(n))
	}
	qs.total.Add(&b.total, totalKey, int64(n))
}

// shrink cuts b to n bytes, the size of the body read.
func (b *bodyHold) shrink(n int) {
	b.caller.Shrink(int64(max(n, 1)))
	b.total.Shrink(int64(max(n, 1)))
}

// release gives b's bytes back (and its unit of the in-flight quota).
//
//go:noinline
func (b *bodyHold) release() {
	b.caller.Release()
	b.total.Release()
	b.inFlight.Release()
}

// refuseMemory answers a POST refused by the process's memory budget with
// 503 and Retry-After, before its body is read, and counts it.
func (h *Endpoint) refuseMemory(w http.ResponseWriter) {
	if h.cfg.onReject != nil {
		h.cfg.onReject(protocol.RejectMemoryBudget)
	}
	h.cfg.logger.Debug("streamable: refused at the memory budget")
	writeBusy(w, http.StatusServiceUnavailable, transport.ID{}, protocol.RejectMemoryBudget.Message(), `{"retryAfterSeconds":1}`, 1)
}

// callerOf returns the caller r's quotas count against: the user of its
// principal (its issuer and subject: quota.User), whatever its client, or
// without one its client's IP address, an IPv6 one by its network
// (quota.CallerAddr).
func (h *Endpoint) callerOf(r *http.Request) string {
	if p := h.principalOf(r); p != "" {
		return quota.User(p)
	}
	return quota.CallerAddr(r.Context(), r.RemoteAddr)
}

// ownerOf returns who r's stateless requests belong to, whom alone they
// answer (stateless_cancel.go): its principal, client included, or its
// client's full IP address; stricter than its caller.
func (h *Endpoint) ownerOf(r *http.Request) string {
	if p := h.principalOf(r); p != "" {
		return p
	}
	return clientIP(r.RemoteAddr)
}

// clientIP returns the host of a host:port address, without brackets.
func clientIP(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 && !strings.HasSuffix(addr, "]") {
		addr = addr[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
}

// refuseQuota answers a request refused by quota q with 429, Retry-After
// and a JSON-RPC error whose data names the quota, and counts it.
func (h *Endpoint) refuseQuota(w http.ResponseWriter, r *http.Request, id transport.ID, q protocol.Quota, why protocol.RejectReason, retry int) {
	if f := h.cfg.quotas.OnRefuse; f != nil {
		f(q)
	}
	if h.cfg.onReject != nil {
		h.cfg.onReject(why)
	}
	h.cfg.logger.Debug("streamable: refused by a quota", "quota", q, "caller", h.callerOf(r))
	data := `{"quota":"` + q.String() + `","retryAfterSeconds":` + strconv.Itoa(retry) + `}`
	writeBusy(w, http.StatusTooManyRequests, id, "quota exceeded: "+q.String(), data, retry)
}

// admitSession counts session, a new session of caller, evicting the
// caller's longest-idle session when the quotas say so. It answers
// RejectOther when admitted, else why not: RejectSessionLimit over the
// quota, RejectStoreUnavailable when the SessionCounter cannot count (the
// store the replicas share does not answer). release gives its place
// back; the session calls it when it ends, but for a shared one, whose end
// is the cluster's (see SessionCounter).
func (h *Endpoint) admitSession(ctx context.Context, caller, session string) (release func(), why protocol.RejectReason) {
	qs := h.quotas
	if qs.sessions == 0 || h.cfg.cluster != nil && qs.q.SessionCounter == nil {
		return func() {}, protocol.RejectOther
	}
	if c := qs.q.SessionCounter; c != nil {
		ok, err := c.Acquire(ctx, caller, session, qs.sessions)
		switch {
		case err != nil:
			h.cfg.logger.Warn("streamable: cannot count the caller's sessions", "error", err)
			return nil, protocol.RejectStoreUnavailable
		case !ok:
			return nil, protocol.RejectSessionLimit
		}
		return func() { c.Release(caller, session) }, protocol.RejectOther
	}
	for range 2 {
		qs.mu.Lock()
		if qs.bySession[caller] < qs.sessions {
			qs.bySession[caller]++
			qs.mu.Unlock()
			return func() { qs.release(caller) }, protocol.RejectOther
		}
		qs.mu.Unlock()
		if !qs.q.EvictIdle {
			return nil, protocol.RejectSessionLimit
		}
		h.mu.RLock()
		idle := h.idlestLocked(caller)
		h.mu.RUnlock()
		if idle == nil {
			return nil, protocol.RejectSessionLimit
		}
		if f := qs.q.OnRefuse; f != nil {
			f(protocol.QuotaSessions)
		}
		h.expire(idle) // releases its count before it returns
	}
	return nil, protocol.RejectSessionLimit
}

// releaseShared counts a shared session out of its caller's sessions
// when a client deletes it (r), with a SessionCounter.
func (h *Endpoint) releaseShared(r *http.Request, s *session) {
	if c := h.quotas.q.SessionCounter; c != nil && h.quotas.sessions > 0 {
		c.Release(h.callerOf(r), s.id)
	}
}

// refreshShared keeps a shared session in use counted in its caller's
// sessions, as SessionCounter asks (Acquire of a counted session renews
// it). The caller is the creating request's, or on another replica the
// session's principal; an unauthenticated session seen only there is not
// renewed, and leaves the count after the idle timeout.
func (h *Endpoint) refreshShared(ctx context.Context, s *session) {
	c, caller := h.quotas.q.SessionCounter, s.caller
	if caller == "" {
		caller = quota.User(s.principal)
	}
	if c == nil || h.quotas.sessions <= 0 || caller == "" {
		return
	}
	if _, err := c.Acquire(context.WithoutCancel(ctx), caller, s.id, h.quotas.sessions); err != nil {
		h.cfg.logger.Warn("streamable: cannot renew a session's count", "session", s.id, "error", err)
	}
}

func (qs *quotaState) release(caller string) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if n := qs.bySession[caller] - 1; n > 0 {
		qs.bySession[caller] = n
	} else {
		delete(qs.bySession, caller)
	}
}

// idlestLocked returns caller's session idle the longest with no request
// in flight, nil if there is none; h.mu is held (to read).
func (h *Endpoint) idlestLocked(caller string) *session {
	var best *session
	var due int64
	for _, s := range h.sessions {
		if s.caller != caller || s.working() {
			continue
		}
		if d := s.deadline.Load(); best == nil || d < due {
			best, due = s, d
		}
	}
	return best
}

// working reports whether s has a request in flight.
func (s *session) working() bool {
	if s.res != nil {
		return s.res.working()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams) > 0
}

// working reports whether a request of the session is not done yet.
func (rs *resumer) working() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.byReq) > 0
}

// quotaRetryAfter reports whether e refuses a request by a per-caller
// quota (busy, with data {"quota", "retryAfterSeconds"}, as the server's
// QuotaRefusal answers) and its Retry-After: a stateless request so
// refused is answered 429, as the endpoint's own quota refusals are.
func quotaRetryAfter(e *transport.Error) (string, bool) {
	if protocol.Code(e.Code) != protocol.CodeServerBusy || !bytes.Contains(e.Data, []byte(`"quota"`)) {
		return "", false
	}
	var d struct {
		Quota      string `json:"quota"`
		RetryAfter int64  `json:"retryAfterSeconds"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Quota == "" {
		return "", false
	}
	return strconv.FormatInt(max(d.RetryAfter, 1), 10), true
}

// SessionCounter counts each caller's concurrent sessions against a
// limit, such as a count that replicas share. Acquire counts session, a
// new session of caller, and reports true, or reports false when caller
// holds limit already (with an error: the count is unavailable, and the
// session is refused). Release counts session out: without a Cluster when
// it ends, however it ends; with a Cluster when a client deletes it (a
// shared session that expires idle ends in the cluster, not on a replica:
// the counter must let its sessions expire after the idle timeout itself).
// caller is then the deleting request's, which may differ in address from
// the creating one's without a principal. It must be safe for concurrent
// use.
type SessionCounter interface {
	Acquire(ctx context.Context, caller, session string, limit int) (bool, error)
	Release(caller, session string)
}
