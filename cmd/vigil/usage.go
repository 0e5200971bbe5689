package main

import (
	"flag"
	"fmt"
)

// usageHead is what vigil -h prints before the flags.
const usageHead = `Usage: vigil [flags]

Vigil serves MCP over Streamable HTTP, by default at http://127.0.0.1:8080/mcp,
or with -stdio over standard input and output. The HTTP server also serves
(with -admin-http, only its own listener does, and the MCP listener serves
only /mcp):

  /metrics       Prometheus metrics (OpenMetrics with exemplars when asked)
  /healthz       liveness: 200 while the process runs
  /readyz        readiness: 200 while serving, 503 once shutdown has begun
                 ("draining") or, with -redis, until Redis first answered
                 and, with -redis-outage-unready, while it does not
                 ("shared session store unreachable"), or, with -upstream,
                 while an upstream -upstream-required names is not ready
                 (each upstream's state, one a line: starting, ready,
                 failing, stopped)
  /debug/vigil   live page: what needs attention (errors, cancellations and
                 their causes, dropped responses, slow calls), per method/tool
                 rate, latency and outcomes, 10-minute charts, requests in
                 flight, sessions, kept traces (?format=json for JSON)

Each flag's default comes from the environment variable named after it.

Authorization: on a loopback address vigil needs no setup. On any other
address (0.0.0.0, ::, a LAN address) it refuses to start unless given
-auth-issuer URL (OAuth 2.1: /mcp needs a bearer token of that issuer,
for -auth-resource) or, knowingly, -allow-unauthenticated.

Flags:
`

// usageTail is what vigil -h prints after the flags: the variables no
// flag names, and the signals.
const usageTail = `
OpenTelemetry (standard variables):
  OTEL_TRACES_EXPORTER           otlp, console (to standard error) or none;
                                 unset with no OTLP endpoint: traces stay in
                                 memory for /debug/vigil (-trace-ring), and
                                 with -stdio they are dropped
  OTEL_EXPORTER_OTLP_ENDPOINT    OTLP endpoint (also ..._TRACES_ENDPOINT,
                                 ..._METRICS_ENDPOINT); setting it selects
                                 otlp for traces
  OTEL_EXPORTER_OTLP_PROTOCOL    http/protobuf (default) or grpc
  OTEL_EXPORTER_OTLP_HEADERS     and the other OTEL_EXPORTER_OTLP_* settings
  OTEL_TRACES_SAMPLER            and OTEL_TRACES_SAMPLER_ARG
                                 (default parentbased_always_on)
  OTEL_SERVICE_NAME              default vigil
  OTEL_RESOURCE_ATTRIBUTES       key=value,...
  OTEL_METRICS_EXPORTER          otlp: also push the MCP metrics over OTLP,
                                 named as OpenTelemetry names them
                                 (mcp.server.operation.duration, ...);
                                 console, or none (default): /metrics only
  OTEL_METRIC_EXPORT_INTERVAL    push period in ms (default 60000); the last
                                 push is at exit
  OTEL_SDK_DISABLED              true: no tracing, no metrics push
  OTEL_BSP_*                     batch span processor settings
Trace context (W3C traceparent, tracestate, baggage) is read from and
written to each request's params._meta; see -trace-client-context for
whether a client's is trusted.

Secrets (environment only):
  VIGIL_REQUEST_STATE_KEY        base64 of >= 32 bytes that seal the
                                 requestState of 2026-07-28 input-required
                                 results; every replica behind one load
                                 balancer needs the same key (default:
                                 VIGIL_CLUSTER_KEY when set, else a random
                                 key per process)
  VIGIL_REDIS_PASSWORD           password of -redis's user (an ACL user named
                                 in the URL: rediss://vigil@host:6379/0),
                                 instead of a password in VIGIL_REDIS_URL
  VIGIL_REDIS_SENTINEL_PASSWORD  password of the Sentinels' user (the URL's
                                 sentinel_user, or their default user) with
                                 -redis rediss+sentinel://
  VIGIL_CLUSTER_KEY              base64 of >= 32 random bytes (openssl rand
                                 -base64 48), the same on every replica,
                                 needed by -redis: relays, session records
                                 and stored events are sealed, and callers'
                                 key names hashed, with it, so that Redis
                                 cannot forge, replay or read them
  VIGIL_CLUSTER_KEY_PREVIOUS     during a rotation, the old key, still
                                 accepted; VIGIL_CLUSTER_KEY is the new one
  VIGIL_AUTH_INTROSPECTION_CLIENT_ID
  VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET
                                 both or neither: verify tokens by asking
                                 the -auth-issuer's introspection endpoint
                                 (RFC 7662) with these client credentials,
                                 instead of as JWTs; the secret is never
                                 printed or logged
  VIGIL_AUTH_EXCHANGE_CLIENT_SECRET
                                 the secret of -auth-exchange-client-id at
                                 -auth-exchange-endpoint; never printed or
                                 logged

Signals: SIGTERM or SIGINT starts a graceful shutdown (/readyz turns 503,
new requests are refused, in-flight ones get -shutdown-grace, less what
stdio upstreams get to exit before they are killed); a second signal
exits at once.
`

// usage prints vigil -h: usageHead, the flags of fs, usageTail.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	_, _ = fmt.Fprint(w, usageHead)
	fs.PrintDefaults()
	_, _ = fmt.Fprint(w, usageTail)
}
