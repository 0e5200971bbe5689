package server

import "time"

// timeoutConfig is what WithTimeout and WithTimeoutFor set.
type timeoutConfig struct {
	d          time.Duration                    // the default; <= 0: none
	forRequest func(req *Request) time.Duration // nil: d for every request
}

// WithTimeout gives each request d from when the server read it
// ([Request.Received]): past it, the handler's context is cancelled with
// the cause [ErrHandlerTimeout] (its Err is [context.DeadlineExceeded]),
// and the request is answered with [protocol.CodeRequestTimeout] (-32001)
// whatever the handler returned, once it returns: handlers must watch
// their context. It bounds the whole middleware chain, a wait for a
// [WithConcurrencyLimit] slot included. A request cancelled for another
// reason first keeps that cause. Notifications are never timed out; a
// task-augmented tools/call is bounded until it returns its task. It is
// the request's own deadline ([Request.SetDeadline]), with no timer or
// goroutine per request. d <= 0 means no default timeout, the default
// (see [WithTimeoutFor]).
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout.d = d })
}

// WithTimeoutFor sets a per-request timeout for [WithTimeout]'s part (and
// adds it, without WithTimeout): f returns the time req may take, 0 for
// the default, or a negative duration for no timeout at all. f sees the
// request before any middleware or handler runs (req.Method, req.Name for
// the tool or prompt, ...); it is called once per request, concurrently,
// and must be safe for that. A nil f is ignored.
func WithTimeoutFor(f func(req *Request) time.Duration) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.timeout.forRequest = f
		}
	})
}

// armTimeout sets req's deadline by WithTimeout and WithTimeoutFor, if
// they give it one.
func (c *timeoutConfig) armTimeout(req *Request) {
	if c.d <= 0 && c.forRequest == nil {
		return
	}
	limit := c.d
	if c.forRequest != nil {
		if v := c.forRequest(req); v != 0 {
			limit = v
		}
	}
	if limit <= 0 {
		return
	}
	start := req.Received
	if start.IsZero() {
		start = time.Now()
	}
	req.SetDeadline(start.Add(limit))
}
