package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"net"

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
// instrumentation that inst returns counts.
// With -redis, a caller's sessions are counted over every replica.
func endpointQuotas(cfg config, inst func() *middleware.Instrumentation) streamable.Option {
	q := streamable.Quotas{
		Sessions:     noQuota(cfg.quotaSessions),
		EvictIdle:    cfg.quotaEvictIdle,
		InFlight:     noQuota(cfg.quotaInFlight),
		Bytes:        cmp.Or(cfg.quotaBytes, -1),
		MemoryBudget: cfg.memoryBudget,
		OnRefuse:     func(q protocol.Quota) { inst().QuotaRefused(q) },
	}
	if cfg.shared != nil && cfg.quotaSessions > 0 {
		q.SessionCounter = cfg.shared.SessionQuota(cfg.quotaSessions)
	}
	return streamable.WithQuotas(q)
}

// quotaOptions returns the server's options of the quotas it keeps: tasks
// and the tool share; with -stdio, whose one client is the only caller,
// only the shedding of -overload-target.
func quotaOptions(cfg config) []server.Option {
	// Over HTTP the endpoint asks the server's Shedder, after the quotas
	// and before the sessions; over stdio the session does.
	srv := []server.Option{server.WithShedder(transport.NewShedder(cfg.overloadTarget))}
	if cfg.stdio {
		return srv
	}
	if cfg.quotaToolShare > 0 && cfg.quotaToolShare < 1 {
		srv = append(srv, server.WithToolShare(cfg.quotaToolShare, callerOf))
	}
	if cfg.quotaTasks > 0 {
		srv = append(srv, server.WithTaskQuota(cfg.quotaTasks, callerOf))
	}
	return srv
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

// The quotas' defaults, so that no caller can take what the others need
// with no flag given (docs/limits.md justifies each):
//   - sessions: a tenth of -max-sessions' 10,000, so that ten callers are
//     needed to fill the server, far above the few sessions a client holds;
//   - in flight: twice -max-in-flight's per-session 256, far above the
//     load a client drives (vigil-bench: 32 clients), a tiny share of what
//     the server runs at once;
//   - tasks: a tenth of the store's 1,000;
//   - tool and process shares: half of each tool's -tool-concurrency
//     slots, of each stdio upstream's -upstream-max-processes, so that
//     another caller's call is admitted (given a process) at once;
//   - bytes: four bodies of -max-body's 4 MiB, far above what a client
//     holds, half of the memory budget the k8s manifest's 256 MiB limit
//     gives (an eighth of GOMEMLIMIT), so that one caller leaves the
//     others room.
const (
	defaultQuotaBytes        = 16 << 20
	defaultQuotaSessions     = 1000
	defaultQuotaInFlight     = 512
	defaultQuotaTasks        = 100
	defaultQuotaToolShare    = 0.5
	defaultQuotaProcessShare = 0.5
)

// quotaFlags are what one caller may hold (-quota-*: sessions, requests
// in flight, bytes, tasks, a share of each tool's slots), what all callers
// may (-memory-budget), and when requests are shed (-overload-target).
type quotaFlags struct{}

func (quotaFlags) register(fs *flag.FlagSet, cfg *config) {
	fs.IntVar(&cfg.quotaSessions, "quota-sessions", defaultQuotaSessions, "most concurrent HTTP sessions of one caller (the authenticated user, whatever its client; without authorization the client's IP address, an IPv6 one by its -quota-ipv6-prefix network); more initializes get 429 with Retry-After, unless -quota-evict-idle (0: no quota)")
	fs.BoolVar(&cfg.quotaEvictIdle, "quota-evict-idle", false, "at -quota-sessions, end the caller's session idle the longest (none with a request in flight) to make room, instead of refusing the initialize")
	fs.IntVar(&cfg.quotaInFlight, "quota-in-flight", defaultQuotaInFlight, "most requests one caller has in flight over HTTP, over all its sessions and stateless requests; more get 429 with Retry-After (0: no quota)")
	fs.Int64Var(&cfg.quotaBytes, "quota-bytes", defaultQuotaBytes, "most `bytes` of request bodies, and of answers not yet written to it, one caller holds at once over HTTP; a larger request gets 429 with Retry-After, before its body is read (0: no quota)")
	fs.Int64Var(&cfg.memoryBudget, "memory-budget", 0, "most `bytes` of request bodies and of answers not yet written all callers hold at once over HTTP; over it a request gets 503 with Retry-After, before its body is read (0: an eighth of GOMEMLIMIT when it is set, else 256 MiB; -1: no budget)")
	fs.IntVar(&cfg.quotaIPv6Prefix, "quota-ipv6-prefix", quota.DefaultIPv6Prefix, "without authorization, a caller is the client's IP address: an IPv6 client counts as its network of this many leading bits, since one host commonly owns a /64 (128: each address; IPv4 and IPv4-mapped clients count by address)")
	fs.IntVar(&cfg.quotaTasks, "quota-tasks", defaultQuotaTasks, "most tasks one caller holds (running, or finished and kept); its own finished ones make room, else -32000 with data.quota \"tasks\" (0: no quota)")
	fs.DurationVar(&cfg.overloadTarget, "overload-target", transport.DefaultShedTarget, "shed requests other than initialize and ping (HTTP 503 with Retry-After, stdio -32000) while requests wait longer than this to be read (90th percentile) with the CPUs busy: more clients than the CPUs keep up with, never slow handlers; the callers sending the most requests are refused first (0: never shed)")
	fs.Float64Var(&cfg.quotaProcessShare, "quota-process-share", defaultQuotaProcessShare, "`fraction` of each stdio upstream's -upstream-max-processes one caller may hold once another caller's session needs a process: at the bound, an idle process of the caller holding the most over its share is ended for the newcomer, which is refused only when none is (0 or 1: no share)")
	fs.Float64Var(&cfg.quotaToolShare, "quota-tool-share", defaultQuotaToolShare, "`fraction` of each tool's -tool-concurrency slots one caller may hold; a call over it is answered -32000 with data.quota \"tool_share\" at once (0 or 1: no quota)")
}

func (quotaFlags) resolve(cfg *config, _ flagSource) error {
	switch {
	case cfg.quotaSessions < 0 || cfg.quotaInFlight < 0 || cfg.quotaTasks < 0 || cfg.quotaBytes < 0:
		return errors.New("-quota-sessions, -quota-in-flight, -quota-tasks and -quota-bytes must not be negative")
	case cfg.memoryBudget < -1:
		return errors.New("-memory-budget must be a number of bytes, 0 (from GOMEMLIMIT) or -1 (none)")
	case !(cfg.quotaToolShare >= 0 && cfg.quotaToolShare <= 1):
		return errors.New("-quota-tool-share must be a fraction from 0 to 1")
	case !(cfg.quotaProcessShare >= 0 && cfg.quotaProcessShare <= 1):
		return errors.New("-quota-process-share must be a fraction from 0 to 1")
	case cfg.quotaIPv6Prefix < 1 || cfg.quotaIPv6Prefix > 128:
		return errors.New("-quota-ipv6-prefix must be from 1 to 128")
	}
	return nil
}
