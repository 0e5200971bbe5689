// Package serverhook lends the packages that observe a server (the
// middleware, the live page) what they need of it that is no part of its
// public API: the functions that run with a request's outcome, which the
// instrumentation's middleware registers on the request's way in ([Ends]),
// and what a server serves and how its pending outcomes are flushed
// ([Server]), which a metrics collector and the live page read. The
// server package fills them; users observe outcomes through
// server.Observer.
package serverhook
