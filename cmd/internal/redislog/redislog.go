// Package redislog is go-redis's own log (its pools' dial failures, its
// Sentinel lookups) routed to vigil's logger, throttled and with the
// passwords cut out ([New]). Only cmd/vigil imports it.
package redislog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/internal/logthrottle"
)

// Log is go-redis's own log (its pools' dial failures, its
// Sentinel lookups) routed to vigil's logger: at most 5 lines at once,
// then one every 10 s, each with the count of the lines left out before
// it, and the passwords given cut out. go-redis has one logger per
// process (redis.SetLogger), so only main sets it, with -redis.
type Log struct {
	logger   *slog.Logger
	throttle *logthrottle.Throttle
	secrets  []string // cut out of every line (the -redis passwords)
}

const (
	burst  = 5
	period = 10 * time.Second
)

// New returns a Log writing to logger, secrets (empty ones ignored) cut out.
func New(logger *slog.Logger, secrets ...string) *Log {
	l := &Log{logger: logger, throttle: logthrottle.New(period, burst)}
	for _, s := range secrets {
		if s != "" {
			l.secrets = append(l.secrets, s)
		}
	}
	return l
}

// Printf is go-redis's internal.Logging.
func (l *Log) Printf(ctx context.Context, format string, v ...any) {
	ok, skipped := l.throttle.Allow()
	if !ok {
		return
	}
	msg := fmt.Sprintf(format, v...)
	for _, s := range l.secrets {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	l.logger.WarnContext(ctx, msg, "source", "go-redis", "lines_not_logged", skipped)
}
