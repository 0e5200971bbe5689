package slogtext

import (
	"context"
	"log/slog"
	"time"
)

// LineHandler is a [slog.Handler] that writes records as
// [slog.TextHandler] does (with no ReplaceAttr or AddSource) and can also
// take a record whose attributes are already in that form.
// the request log of middleware.WithRequestLog, whose logger's handler is a middleware.LogHandler
// wrapping a LineHandler, hands it each request's record so, spared the [slog.Record] and its
// attributes, which cost more than formatting the line itself.
type LineHandler interface {
	slog.Handler
	// HandleTextLine writes the record of time t (none if zero), level
	// and message msg whose attributes, as the TextHandler writes them,
	// are attrs: each " key=value", with its leading space. The caller
	// has checked that the handler is enabled at level; attrs is the
	// caller's again when HandleTextLine returns.
	HandleTextLine(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []byte) error
}

// The direct path of the request log of middleware.WithRequestLog.
var _ LineHandler = (*Handler)(nil)
