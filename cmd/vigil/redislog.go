package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/vigil-mcp/vigil/internal/logthrottle"
)

// redisLibraryLog is go-redis's own log (its pools' dial failures, its
// Sentinel lookups) routed to vigil's logger: at most 5 lines at once,
// then one every 10 s, each with the count of the lines left out before
// it, and the passwords given cut out. go-redis has one logger per
// process (redis.SetLogger), so only main sets it, with -redis.
type redisLibraryLog struct {
	logger   *slog.Logger
	throttle *logthrottle.Throttle
	secrets  []string // cut out of every line (the -redis passwords)
}

const (
	redisLogBurst  = 5
	redisLogPeriod = 10 * time.Second
)

func newRedisLibraryLog(logger *slog.Logger, secrets ...string) *redisLibraryLog {
	l := &redisLibraryLog{logger: logger, throttle: logthrottle.New(redisLogPeriod, redisLogBurst)}
	for _, s := range secrets {
		if s != "" {
			l.secrets = append(l.secrets, s)
		}
	}
	return l
}

// Printf is go-redis's internal.Logging.
func (l *redisLibraryLog) Printf(ctx context.Context, format string, v ...any) {
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
