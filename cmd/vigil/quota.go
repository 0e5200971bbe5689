package main

import (
	"cmp"
	"context"
	"net"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/quota"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// noQuota turns a flag's 0 (no quota) into the library's "no limit".
func noQuota(n int) int { return cmp.Or(n, -1) }

// endpointQuotas returns the MCP endpoint's quotas, whose refusals the
// metrics that m returns count.
// With -redis, a caller's sessions are counted over every replica.
func endpointQuotas(cfg config, m func() *metrics.Metrics) streamable.Option {
	q := streamable.Quotas{
		Sessions:     noQuota(cfg.quotaSessions),
		EvictIdle:    cfg.quotaEvictIdle,
		InFlight:     noQuota(cfg.quotaInFlight),
		Bytes:        cmp.Or(cfg.quotaBytes, -1),
		MemoryBudget: cfg.memoryBudget,
		OnRefuse:     func(q protocol.Quota) { m().QuotaRefused(q.String()) },
	}
	if cfg.shared != nil && cfg.quotaSessions > 0 {
		q.SessionCounter = cfg.shared.SessionQuota(cfg.quotaSessions)
	}
	return streamable.WithQuotas(q)
}

// quotaOptions returns the options of the quotas the server and its
// middleware keep: tasks and the tool share; with -stdio, whose one client
// is the only caller, only the shedding of -overload-target.
func quotaOptions(cfg config) ([]middleware.InstrumentationOption, []server.Option) {
	var mw []middleware.InstrumentationOption
	var srv []server.Option
	// Over HTTP the endpoint asks the server's Shedder, after the quotas
	// and before the sessions; over stdio the session does.
	srv = append(srv, server.WithShedder(transport.NewShedder(cfg.overloadTarget)))
	if cfg.stdio {
		return nil, srv
	}
	if cfg.quotaToolShare > 0 && cfg.quotaToolShare < 1 {
		mw = append(mw, middleware.WithToolShare(cfg.quotaToolShare, callerOf))
	}
	if cfg.quotaTasks > 0 {
		srv = append(srv, server.WithTaskQuota(cfg.quotaTasks, callerOf))
	}
	return mw, srv
}

// callerOf names the caller a request counts against: the user of its
// principal (issuer and subject, whatever its client: quota.User), or the
// IP address of the client's connection, an IPv6 one by its network
// (clientConnContext).
func callerOf(req *server.Request) string {
	ctx := req.ArrivalContext()
	if p, ok := auth.PrincipalFromContext(ctx); ok {
		return quota.User(p.Key())
	}
	return quota.CallerAddr(ctx, "")
}

// clientConnContext returns the ConnContext that puts the caller key of
// each connection's client (its IP address, an IPv6 one by its network of
// v6Bits bits) in the connection's context, once per connection, for
// callerOf, the endpoint's quotas and the rate limits.
func clientConnContext(v6Bits int) func(ctx context.Context, c net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		return quota.ContextWithAddr(ctx, quota.RemoteAddr(c.RemoteAddr().String(), v6Bits))
	}
}
