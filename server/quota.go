package server

import (
	"strconv"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// QuotaError is why a request was refused by a per-caller quota: the
// error inside the *Error of [QuotaRefusal]. Telemetry finds it in a
// request's outcome (errors.As) to count the refusal by its quota.
type QuotaError struct {
	Quota      protocol.Quota
	RetryAfter time.Duration // when a retry may succeed; 0: unknown
}

func (e *QuotaError) Error() string { return "quota exceeded: " + e.Quota.String() }

// QuotaRefusal returns the error that refuses a request by quota q: code
// [protocol.CodeServerBusy] (-32000), as other refusals for lack of room,
// with data {"quota": q's label, "retryAfterSeconds": retryAfter in whole
// seconds, at least 1}. It unwraps to a *[QuotaError].
func QuotaRefusal(q protocol.Quota, retryAfter time.Duration) *Error {
	secs := max(int64((retryAfter+time.Second-1)/time.Second), 1)
	e := NewError(protocol.CodeServerBusy, &QuotaError{Quota: q, RetryAfter: retryAfter})
	e.Data = []byte(`{"quota":"` + q.String() + `","retryAfterSeconds":` + strconv.FormatInt(secs, 10) + `}`)
	return e
}

// WithTaskQuota limits the tasks one caller holds in the store (running,
// or finished and kept for their TTL) to n, so that one caller cannot take
// the room of [WithMaxTasks] from the others; key names the caller of a
// request (such as its principal, or its client's address; "" is a caller
// too). Over it, the caller's own finished task updated longest ago is
// deleted to make room; when all of them still run, the request is refused
// with [QuotaRefusal]([protocol.QuotaTasks]). n < 1 or a nil key: no quota
// (the default).
func WithTaskQuota(n int, key func(req *Request) string) Option {
	return optionFunc(func(c *config) {
		if n < 1 || key == nil {
			c.tasks.perCaller, c.tasks.quotaKey = 0, nil
			return
		}
		c.tasks.perCaller, c.tasks.quotaKey = n, key
	})
}

// taskRetry is the Retry-After of a task quota refusal: tasks run for a
// while.
const taskRetry = 10 * time.Second
