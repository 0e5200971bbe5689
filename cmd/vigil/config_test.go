package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/exposure"
	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/cmd/internal/servercard"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// defaultConfig is the configuration with no flags and no environment.
func defaultConfig() config {
	c := config{
		discovery:         servercard.Flags{Enabled: true, Name: servercard.DefaultName},
		httpAddr:          "127.0.0.1:8080",
		grace:             10 * time.Second,
		logLevel:          slog.LevelInfo,
		logFormat:         "text",
		maxFrame:          4 << 20,
		maxBody:           4 << 20,
		maxSessions:       10000,
		maxInFlight:       256,
		listChangedDelay:  50 * time.Millisecond,
		idleTimeout:       30 * time.Minute,
		requestTimeout:    time.Minute,
		toolConcurrency:   256,
		maxResultBytes:    4 << 20,
		traceRing:         100,
		debug:             true,
		gcHeadroomMiB:     32,
		httpIdleTimeout:   2 * time.Minute,
		bodyReadTimeout:   30 * time.Second,
		quotaSessions:     1000,
		quotaInFlight:     512,
		quotaBytes:        16 << 20,
		quotaTasks:        100,
		quotaIPv6Prefix:   64,
		quotaToolShare:    0.5,
		quotaProcessShare: 0.5,
		overloadTarget:    transport.DefaultShedTarget,

		sseWriteTimeout:  10 * time.Second,
		maxResumptions:   4,
		initTimeout:      time.Minute,
		maxSessionState:  256 << 10,
		maxSessionEvents: 1 << 20,
	}
	c.auditBlock, c.authCacheTTL, c.authIntrospectRate = 100*time.Millisecond, 5*time.Minute, 20
	c.upstreamMaxProcesses, c.upstreamIdle, c.upstreamStartTimeout = 32, 5*time.Minute, 2*time.Minute
	c.upstreamMaxMessage, c.upstreamMaxCatalog = 4<<20, 16<<20
	return c
}

func TestParseConfig(t *testing.T) {
	issuer := func(args ...string) []string {
		return append([]string{"-auth-issuer", "https://issuer.example"}, args...)
	}
	with := func(f func(*config)) config {
		c := defaultConfig()
		f(&c)
		return c
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string
	}{
		{name: "defaults", want: defaultConfig()},
		{
			name: "flags",
			args: []string{
				"-http", ":9090", "-stdio", "-shutdown-grace", "3s", "-log-level", "debug", "-log-format", "json",
				"-max-frame", "1024", "-max-body", "2048", "-max-sessions", "5", "-max-in-flight", "7", "-list-changed-delay", "0",
				"-idle-timeout", "0", "-allowed-hosts", "mcp.example.com, vigil.internal:8080", "-request-timeout", "0",
				"-tool-concurrency", "0", "-trace-ring", "0", "-debug=false", "-gc-headroom", "64",
				"-http-idle-timeout", "5s", "-body-read-timeout", "0", "-audit-log", "/var/log/vigil-audit.jsonl",
				"-auth-issuer", "https://auth.example.com/realms/x", "-auth-resource", "https://mcp.example.com/mcp",
				"-auth-scopes", "mcp:read, mcp:call", "-auth-tool-scopes", "sleep=mcp:slow+mcp:admin,echo=mcp:echo",
				"-allow-unauthenticated", "-sse-write-timeout", "3s", "-max-resumptions", "2", "-init-timeout", "20s",
				"-max-session-state", "4096", "-max-session-events", "8192", "-max-result-bytes", "1000",
				"-audit-block", "0", "-trace-content", "-skills", "/srv/skills",
			},
			want: config{
				discovery:       servercard.Flags{Enabled: true, Name: servercard.DefaultName},
				sseWriteTimeout: 3 * time.Second, maxResumptions: 2, initTimeout: 20 * time.Second,
				maxSessionState: 4096, maxSessionEvents: 8192,
				httpAddr: ":9090", stdio: true, grace: 3 * time.Second, logLevel: slog.LevelDebug, logFormat: "json",
				maxFrame: 1024, maxBody: 2048, maxSessions: 5, maxInFlight: 7, maxResultBytes: 1000,
				allowedHosts:    []string{"mcp.example.com", "vigil.internal:8080"},
				httpIdleTimeout: 5 * time.Second, auditLog: "/var/log/vigil-audit.jsonl", gcHeadroomMiB: 64,
				authIssuer: "https://auth.example.com/realms/x", authResource: "https://mcp.example.com/mcp",
				authScopes:           []string{"mcp:read", "mcp:call"},
				authToolScopes:       map[string][]string{"sleep": {"mcp:slow", "mcp:admin"}, "echo": {"mcp:echo"}},
				allowUnauthenticated: true,
				quotaSessions:        1000, quotaInFlight: 512, quotaBytes: 16 << 20, quotaTasks: 100, quotaToolShare: 0.5, quotaProcessShare: 0.5, quotaIPv6Prefix: 64, overloadTarget: transport.DefaultShedTarget,
				authCacheTTL: 5 * time.Minute, authIntrospectRate: 20,
				traceContent: true, skillsDir: "/srv/skills",
				upstreamMaxProcesses: 32, upstreamIdle: 5 * time.Minute, upstreamStartTimeout: 2 * time.Minute,
				upstreamMaxMessage: 4 << 20, upstreamMaxCatalog: 16 << 20,
			},
		},
		{
			name: "environment",
			env: map[string]string{
				"VIGIL_HTTP_ADDR": "0.0.0.0:80", "VIGIL_STDIO": "true", "VIGIL_SHUTDOWN_GRACE": "1m",
				"VIGIL_LOG_LEVEL": "WARN", "VIGIL_LOG_FORMAT": "json", "VIGIL_MAX_FRAME": "10", "VIGIL_MAX_BODY": "20",
				"VIGIL_MAX_SESSIONS": "30", "VIGIL_MAX_IN_FLIGHT": "40", "VIGIL_IDLE_TIMEOUT": "5m",
				"VIGIL_ALLOWED_HOSTS": "a.example", "VIGIL_REQUEST_TIMEOUT": "2s", "VIGIL_TOOL_CONCURRENCY": "3",
				"VIGIL_TRACE_RING": "9", "VIGIL_DEBUG": "false", "VIGIL_GC_HEADROOM": "0",
				"VIGIL_HTTP_IDLE_TIMEOUT": "1s", "VIGIL_BODY_READ_TIMEOUT": "2s", "VIGIL_AUDIT_LOG": "audit.jsonl",
				"VIGIL_AUTH_ISSUER": "https://issuer.example", "VIGIL_AUTH_RESOURCE": "https://m.example/mcp",
				"VIGIL_AUTH_SCOPES": "a", "VIGIL_AUTH_TOOL_SCOPES": "echo=b", "VIGIL_ALLOW_UNAUTHENTICATED": "true",
				"VIGIL_AUTH_INTROSPECTION_CLIENT_ID": "vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET": "s3cr3t",
				"VIGIL_SSE_WRITE_TIMEOUT": "4s", "VIGIL_MAX_RESUMPTIONS": "8", "VIGIL_INIT_TIMEOUT": "30s",
				"VIGIL_MAX_SESSION_STATE": "1000", "VIGIL_MAX_SESSION_EVENTS": "2000", "VIGIL_MAX_RESULT_BYTES": "2000",
				"VIGIL_AUTH_CACHE_TTL": "0", "VIGIL_AUTH_INTROSPECTION_RATE": "50", "VIGIL_AUDIT_BLOCK": "1s", "VIGIL_LIST_CHANGED_DELAY": "0s",
				"VIGIL_SKILLS": "skills",
			},
			want: config{
				discovery:       servercard.Flags{Enabled: true, Name: servercard.DefaultName},
				sseWriteTimeout: 4 * time.Second, maxResumptions: 8, initTimeout: 30 * time.Second,
				maxSessionState: 1000, maxSessionEvents: 2000,
				httpAddr: "0.0.0.0:80", stdio: true, grace: time.Minute, logLevel: slog.LevelWarn, logFormat: "json",
				maxFrame: 10, maxBody: 20, maxSessions: 30, maxInFlight: 40, idleTimeout: 5 * time.Minute, maxResultBytes: 2000,
				allowedHosts: []string{"a.example"}, requestTimeout: 2 * time.Second, toolConcurrency: 3, traceRing: 9,
				httpIdleTimeout: time.Second, bodyReadTimeout: 2 * time.Second, auditLog: "audit.jsonl",
				authIssuer: "https://issuer.example", authResource: "https://m.example/mcp",
				authScopes: []string{"a"}, authToolScopes: map[string][]string{"echo": {"b"}}, allowUnauthenticated: true,
				introspectionClientID: "vigil", introspectionSecret: "s3cr3t",
				quotaSessions: 1000, quotaInFlight: 512, quotaBytes: 16 << 20, quotaTasks: 100, quotaToolShare: 0.5, quotaProcessShare: 0.5, quotaIPv6Prefix: 64, overloadTarget: transport.DefaultShedTarget,
				authCacheTTL: 0, authIntrospectRate: 50, auditBlock: time.Second, skillsDir: "skills",
				upstreamMaxProcesses: 32, upstreamIdle: 5 * time.Minute, upstreamStartTimeout: 2 * time.Minute,
				upstreamMaxMessage: 4 << 20, upstreamMaxCatalog: 16 << 20,
			},
		},
		{
			name: "quotas by flag",
			args: []string{"-quota-sessions", "3", "-quota-evict-idle", "-quota-in-flight", "0", "-quota-tasks", "7", "-quota-tool-share", "0.25"},
			want: with(func(c *config) {
				c.quotaSessions, c.quotaEvictIdle, c.quotaInFlight, c.quotaTasks, c.quotaToolShare = 3, true, 0, 7, 0.25
			}),
		},
		{
			name: "quotas by environment",
			env: map[string]string{
				"VIGIL_QUOTA_SESSIONS": "4", "VIGIL_QUOTA_EVICT_IDLE": "true", "VIGIL_QUOTA_IN_FLIGHT": "9",
				"VIGIL_QUOTA_TASKS": "0", "VIGIL_QUOTA_TOOL_SHARE": "1",
			},
			want: with(func(c *config) {
				c.quotaSessions, c.quotaEvictIdle, c.quotaInFlight, c.quotaTasks, c.quotaToolShare = 4, true, 9, 0, 1
			}),
		},
		{name: "overload shedding off", args: []string{"-overload-target", "0"}, want: with(func(c *config) { c.overloadTarget = 0 })},
		{
			name: "overload target by environment", env: map[string]string{"VIGIL_OVERLOAD_TARGET": "20ms"},
			want: with(func(c *config) { c.overloadTarget = 20 * time.Millisecond }),
		},
		{name: "negative quota", args: []string{"-quota-tasks", "-1"}, wantErr: "-quota-sessions, -quota-in-flight, -quota-tasks and -quota-bytes must not be negative"},
		{
			name: "byte quota and memory budget", args: []string{"-quota-bytes", "1048576", "-memory-budget", "-1"},
			want: with(func(c *config) { c.quotaBytes, c.memoryBudget = 1<<20, -1 }),
		},
		{
			name: "byte quota and memory budget by environment", env: map[string]string{"VIGIL_QUOTA_BYTES": "0", "VIGIL_MEMORY_BUDGET": "67108864"},
			want: with(func(c *config) { c.quotaBytes, c.memoryBudget = 0, 64<<20 }),
		},
		{name: "memory budget out of range", args: []string{"-memory-budget", "-2"}, wantErr: "-memory-budget must be a number of bytes, 0 (from GOMEMLIMIT) or -1 (none)"},
		{name: "tool share over 1", args: []string{"-quota-tool-share", "1.5"}, wantErr: "-quota-tool-share must be a fraction from 0 to 1"},
		{name: "process share over 1", args: []string{"-quota-process-share", "1.5"}, wantErr: "-quota-process-share must be a fraction from 0 to 1"},
		{name: "IPv6 caller prefix", args: []string{"-quota-ipv6-prefix", "56"}, want: with(func(c *config) { c.quotaIPv6Prefix = 56 })},
		{name: "IPv6 caller prefix by environment", env: map[string]string{"VIGIL_QUOTA_IPV6_PREFIX": "128"}, want: with(func(c *config) { c.quotaIPv6Prefix = 128 })},
		{name: "IPv6 caller prefix out of range", args: []string{"-quota-ipv6-prefix", "129"}, wantErr: "-quota-ipv6-prefix must be from 1 to 128"},
		{
			name: "shared sessions",
			env:  map[string]string{"VIGIL_REDIS_URL": "redis://:pw@redis:6379/2", "VIGIL_CLUSTER_KEY": testClusterKeyB64},
			want: with(func(c *config) {
				c.redisURL, c.clusterKey, c.stateKey = "redis://:pw@redis:6379/2", testClusterKey, testClusterKey
			}),
		},
		{
			name: "shared sessions during a rotation",
			env:  map[string]string{"VIGIL_REDIS_URL": "redis://redis:6379/2", "VIGIL_CLUSTER_KEY": testClusterKeyB64 + "\n", "VIGIL_CLUSTER_KEY_PREVIOUS": base64.StdEncoding.EncodeToString(make([]byte, 40))},
			want: with(func(c *config) {
				c.redisURL, c.clusterKey, c.clusterKeyPrev = "redis://redis:6379/2", testClusterKey, make([]byte, 40)
				c.stateKey = testClusterKey
			}),
		},
		{name: "redis without a cluster key", args: []string{"-redis", "redis://redis:6379/2"}, wantErr: "-redis needs VIGIL_CLUSTER_KEY"},
		{
			name: "short cluster key", args: []string{"-redis", "redis://redis:6379/2"},
			env: map[string]string{"VIGIL_CLUSTER_KEY": base64.StdEncoding.EncodeToString(make([]byte, 31))}, wantErr: "VIGIL_CLUSTER_KEY must be the base64 of at least 32 random bytes",
		},
		{
			name: "cluster key not base64", args: []string{"-redis", "redis://redis:6379/2"},
			env: map[string]string{"VIGIL_CLUSTER_KEY": "a passphrase, not a key!!!!!!!!!!!!!!!!!!!!!!!!!"}, wantErr: "VIGIL_CLUSTER_KEY must be the base64",
		},
		{
			name: "previous cluster key alone",
			env:  map[string]string{"VIGIL_CLUSTER_KEY_PREVIOUS": testClusterKeyB64}, wantErr: "VIGIL_CLUSTER_KEY_PREVIOUS is the key a rotation replaces",
		},
		{name: "redis password in argv", args: []string{"-redis", "redis://:pw@redis:6379/2"}, wantErr: "-redis: a password on the command line is visible to every local user; pass it in VIGIL_REDIS_PASSWORD (the Sentinels' in VIGIL_REDIS_SENTINEL_PASSWORD), or the URL in VIGIL_REDIS_URL, instead"},
		{name: "redis user and password in argv", args: []string{"-redis", "rediss://vigil:pw@redis:6379"}, wantErr: "pass it in VIGIL_REDIS_PASSWORD"},
		{name: "sentinel password in argv", args: []string{"-redis", "rediss+sentinel://vigil:pw@s1,s2:26379,s3/mymaster"}, wantErr: "pass it in VIGIL_REDIS_PASSWORD"},
		{name: "password parameter in argv", args: []string{"-redis", "redis+sentinel://127.0.0.1:1/mymaster?password=X"}, wantErr: "pass it in VIGIL_REDIS_PASSWORD"},
		{name: "sentinel password parameter in argv", args: []string{"-redis", "rediss+sentinel://s1/mymaster?sentinel_user=w&sentinel_password=X"}, wantErr: "the Sentinels' in VIGIL_REDIS_SENTINEL_PASSWORD"},
		{
			name: "password parameter in VIGIL_REDIS_URL", env: map[string]string{"VIGIL_REDIS_URL": "redis+sentinel://127.0.0.1:1/mymaster?password=X", "VIGIL_CLUSTER_KEY": testClusterKeyB64},
			want: with(func(c *config) {
				c.redisURL = "redis+sentinel://127.0.0.1:1/mymaster?password=X"
				c.clusterKey, c.stateKey = testClusterKey, testClusterKey
			}),
		},
		{name: "outage-unready without redis", args: []string{"-redis-outage-unready"}, wantErr: "need -redis"},
		{
			name: "redis under Sentinel, unready in an outage",
			args: []string{"-redis", "rediss+sentinel://vigil@s1,s2,s3/mymaster?sentinel_user=watch", "-redis-outage-unready"},
			env:  map[string]string{"VIGIL_CLUSTER_KEY": testClusterKeyB64, "VIGIL_REDIS_SENTINEL_PASSWORD": "spw"},
			want: with(func(c *config) {
				c.redisURL, c.redisOutageUnready, c.redisSentinelPassword = "rediss+sentinel://vigil@s1,s2,s3/mymaster?sentinel_user=watch", true, "spw"
				c.clusterKey, c.stateKey = testClusterKey, testClusterKey
			}),
		},
		{
			name: "redis with TLS, a CA and an ACL user",
			args: []string{"-redis", "rediss://vigil@redis:6379/0", "-redis-ca", "/etc/vigil/redis-ca.pem"},
			env:  map[string]string{"VIGIL_REDIS_PASSWORD": "pw", "VIGIL_CLUSTER_KEY": testClusterKeyB64},
			want: with(func(c *config) {
				c.redisURL, c.redisCA, c.redisPassword = "rediss://vigil@redis:6379/0", "/etc/vigil/redis-ca.pem", "pw"
				c.clusterKey, c.stateKey = testClusterKey, testClusterKey
			}),
		},
		{
			name: "redis plaintext, knowingly",
			env:  map[string]string{"VIGIL_REDIS_URL": "redis://redis:6379/0", "VIGIL_REDIS_INSECURE_PLAINTEXT": "true", "VIGIL_CLUSTER_KEY": testClusterKeyB64},
			want: with(func(c *config) {
				c.redisURL, c.redisPlaintext, c.clusterKey, c.stateKey = "redis://redis:6379/0", true, testClusterKey, testClusterKey
			}),
		},
		{name: "redis password without redis", env: map[string]string{"VIGIL_REDIS_PASSWORD": "pw"}, wantErr: "-redis-ca, -redis-insecure-plaintext, -redis-outage-unready, VIGIL_REDIS_PASSWORD and VIGIL_REDIS_SENTINEL_PASSWORD need -redis"},
		{name: "redis CA without redis", args: []string{"-redis-ca", "ca.pem"}, wantErr: "need -redis"},
		{
			name: "redis without password in argv", args: []string{"-redis", "redis://redis:6379/2"}, env: map[string]string{"VIGIL_CLUSTER_KEY": testClusterKeyB64},
			want: with(func(c *config) {
				c.redisURL, c.clusterKey, c.stateKey = "redis://redis:6379/2", testClusterKey, testClusterKey
			}),
		},
		{
			name: "a flag wins over the environment",
			args: []string{"-http", "127.0.0.1:1", "-stdio=false"},
			env:  map[string]string{"VIGIL_HTTP_ADDR": "127.0.0.1:2", "VIGIL_STDIO": "1", "VIGIL_TRACE_RING": "5"},
			want: with(func(c *config) { c.httpAddr = "127.0.0.1:1"; c.traceRing = 5 }),
		},
		{
			name: "an empty variable is unset",
			env:  map[string]string{"VIGIL_HTTP_ADDR": "", "VIGIL_MAX_BODY": ""},
			want: defaultConfig(),
		},
		{
			name: "other variables are ignored",
			env:  map[string]string{"HTTP_ADDR": "x", "VIGIL_HTTP": "y", "OTEL_TRACES_EXPORTER": "none"},
			want: defaultConfig(),
		},
		{name: "VIGIL_VERSION is no flag's", env: map[string]string{"VIGIL_VERSION": "1.2"}, want: defaultConfig()},
		{name: "bad variable", env: map[string]string{"VIGIL_SHUTDOWN_GRACE": "soon"}, wantErr: `VIGIL_SHUTDOWN_GRACE="soon": parse error`},
		{name: "bad bool variable", env: map[string]string{"VIGIL_STDIO": "yes"}, wantErr: `VIGIL_STDIO="yes": parse error`},
		{name: "bad level variable", env: map[string]string{"VIGIL_LOG_LEVEL": "loud"}, wantErr: `VIGIL_LOG_LEVEL="loud": `},
		{name: "bad flag", args: []string{"-max-body", "big"}, wantErr: `invalid value "big" for flag -max-body`},
		{name: "unknown flag", args: []string{"-verbose"}, wantErr: "flag provided but not defined: -verbose"},
		{name: "arguments", args: []string{"serve"}, wantErr: `unexpected arguments: ["serve"]`},
		{name: "bad log format", args: []string{"-log-format", "xml"}, wantErr: `-log-format "xml": want text or json`},
		{name: "negative grace", args: []string{"-shutdown-grace", "-1s"}, wantErr: "must not be negative"},
		{name: "zero body", args: []string{"-max-body", "0"}, wantErr: "must be positive"},
		{name: "negative ring", env: map[string]string{"VIGIL_TRACE_RING": "-1"}, wantErr: "must not be negative"},
		{name: "negative body read timeout", args: []string{"-body-read-timeout", "-1s"}, wantErr: "must not be negative"},
		{name: "negative http idle timeout", args: []string{"-http-idle-timeout", "-1s"}, wantErr: "must not be negative"},
		{name: "negative list-changed delay", args: []string{"-list-changed-delay", "-1ms"}, wantErr: "-list-changed-delay must not be negative"},
		{name: "cache ttl without introspection", args: issuer("-auth-cache-ttl", "1m"), wantErr: "-auth-cache-ttl and -auth-introspection-rate apply to introspected tokens"},
		{name: "rate without introspection", env: map[string]string{"VIGIL_AUTH_INTROSPECTION_RATE": "5"}, wantErr: "apply to introspected tokens"},
		{name: "negative audit block", args: []string{"-audit-block", "-1ms"}, wantErr: "must not be negative"},
		{
			name: "zero introspection rate", args: issuer("-auth-introspection-rate", "0"),
			env:     map[string]string{"VIGIL_AUTH_INTROSPECTION_CLIENT_ID": "vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET": "s"},
			wantErr: "-auth-introspection-rate must be a positive number",
		},
		{name: "tool scopes without =", args: issuer("-auth-tool-scopes", "echo"), wantErr: `-auth-tool-scopes: "echo": want tool=scope+scope`},
		{name: "tool scopes without scope", args: issuer("-auth-tool-scopes", "echo="), wantErr: `"echo=": want tool=scope+scope`},
		{name: "tool scopes without tool", args: issuer("-auth-tool-scopes", "=a"), wantErr: `"=a": want tool=scope+scope`},
		{name: "tool scopes empty item", args: issuer("-auth-tool-scopes", "echo=a,,sleep=b"), wantErr: `"": want tool=scope+scope`},
		{name: "tool scopes empty scope", args: issuer("-auth-tool-scopes", "echo=a++b"), wantErr: `bad scope ""`},
		{name: "tool scopes spaced scope", args: issuer("-auth-tool-scopes", "echo=a b"), wantErr: `bad scope "a b"`},
		{name: "tool scopes twice", args: issuer("-auth-tool-scopes", "echo=a,echo=b"), wantErr: `tool "echo" given twice`},
		{name: "issuer not a URL", args: []string{"-auth-issuer", "auth.example.com"}, wantErr: `-auth-issuer "auth.example.com": want an http or https URL`},
		{name: "issuer without host", args: []string{"-auth-issuer", "https:///x"}, wantErr: "no host"},
		{name: "resource with fragment", args: issuer("-auth-resource", "https://m.example/mcp#x"), wantErr: "a fragment is not allowed"},
		{name: "resource without issuer", args: []string{"-auth-resource", "https://m.example/mcp"}, wantErr: "need -auth-issuer"},
		{name: "scopes without issuer", args: []string{"-auth-scopes", "a"}, wantErr: "need -auth-issuer"},
		{name: "tool scopes without issuer", args: []string{"-auth-tool-scopes", "echo=a"}, wantErr: "need -auth-issuer"},
		{
			name: "introspection id alone", args: issuer(),
			env:     map[string]string{"VIGIL_AUTH_INTROSPECTION_CLIENT_ID": "vigil"},
			wantErr: "VIGIL_AUTH_INTROSPECTION_CLIENT_ID and VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET must be set together",
		},
		{
			name: "introspection secret alone", args: issuer(),
			env:     map[string]string{"VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET": "s3cr3t"},
			wantErr: "must be set together",
		},
		{
			name:    "introspection without issuer",
			env:     map[string]string{"VIGIL_AUTH_INTROSPECTION_CLIENT_ID": "vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET": "s3cr3t"},
			wantErr: "needs -auth-issuer",
		},
		{
			name: "exchange without its secret", args: issuer("-auth-exchange-endpoint", "https://auth.example.com/token", "-auth-exchange-client-id", "vigil"),
			wantErr: "-auth-exchange-endpoint, -auth-exchange-client-id and VIGIL_AUTH_EXCHANGE_CLIENT_SECRET must be set together",
		},
		{
			name: "exchange secret alone", args: issuer(),
			env:     map[string]string{"VIGIL_AUTH_EXCHANGE_CLIENT_SECRET": "s3cr3t"},
			wantErr: "must be set together",
		},
		{
			name: "exchange without issuer", args: []string{"-auth-exchange-endpoint", "https://auth.example.com/token", "-auth-exchange-client-id", "vigil"},
			env:     map[string]string{"VIGIL_AUTH_EXCHANGE_CLIENT_SECRET": "s3cr3t"},
			wantErr: "-auth-exchange-endpoint needs -auth-issuer",
		},
		{name: "redis with stdio", args: []string{"-stdio", "-redis", "redis://127.0.0.1:6379/0"}, wantErr: "-redis shares HTTP sessions"},
		{name: "negative GC headroom", args: []string{"-gc-headroom", "-1"}, wantErr: "must not be negative"},
		{name: "zero SSE write timeout", args: []string{"-sse-write-timeout", "0"}, wantErr: "-sse-write-timeout, -init-timeout, -max-resumptions, -max-session-state and -max-session-events must be positive"},
		{name: "zero session events", env: map[string]string{"VIGIL_MAX_SESSION_EVENTS": "0"}, wantErr: "must be positive"},
		{name: "negative result bound", args: []string{"-max-result-bytes", "-1"}, wantErr: "-max-result-bytes must not be negative"},
		{
			name: "result bound", env: map[string]string{"VIGIL_MAX_RESULT_BYTES": "0"},
			want: with(func(c *config) { c.maxResultBytes = 0 }),
		},
		{name: "audit to stdout with stdio", args: []string{"-stdio", "-audit-log", "-"}, wantErr: "standard output carries MCP"},
		{name: "admin with stdio", args: []string{"-stdio", "-admin-http", ":9090"}, wantErr: "-admin-http"},
		{
			name: "issuer over plain http", args: []string{"-auth-issuer", "http://auth.example.com/realms/x"},
			wantErr: `-auth-issuer "http://auth.example.com/realms/x" is plain http on a non-loopback host`,
		},
		{name: "issuer over http, LAN address", env: map[string]string{"VIGIL_AUTH_ISSUER": "http://10.1.2.3:8080"}, wantErr: "-auth-insecure-http"},
		{name: "insecure http without issuer", args: []string{"-auth-insecure-http"}, wantErr: "-auth-insecure-http needs -auth-issuer"},
		{
			name: "issuer over http, loopback", args: []string{"-auth-issuer", "http://127.0.0.1:8081"},
			want: with(func(c *config) { c.authIssuer = "http://127.0.0.1:8081" }),
		},
		{
			name: "issuer over http, localhost", args: []string{"-auth-issuer", "http://localhost:8081/realms/x"},
			want: with(func(c *config) { c.authIssuer = "http://localhost:8081/realms/x" }),
		},
		{
			name: "issuer over http, -auth-insecure-http", args: []string{"-auth-issuer", "http://auth.lab:8080", "-auth-insecure-http"},
			want: with(func(c *config) { c.authIssuer, c.authInsecureHTTP = "http://auth.lab:8080", true }),
		},
		{
			name: "issuer over http, VIGIL_AUTH_INSECURE_HTTP",
			env:  map[string]string{"VIGIL_AUTH_ISSUER": "http://auth.lab", "VIGIL_AUTH_INSECURE_HTTP": "true"},
			want: with(func(c *config) { c.authIssuer, c.authInsecureHTTP = "http://auth.lab", true }),
		},
		{name: "hide tools without issuer", args: []string{"-auth-hide-tools"}, wantErr: "-auth-hide-tools needs -auth-issuer"},
		{name: "require dpop without issuer", args: []string{"-auth-require-dpop"}, wantErr: "-auth-require-dpop and -auth-dpop-nonces need -auth-issuer"},
		{name: "dpop nonces without issuer", args: []string{"-auth-dpop-nonces"}, wantErr: "-auth-require-dpop and -auth-dpop-nonces need -auth-issuer"},
		{
			name: "require dpop, with nonces", args: []string{"-auth-issuer", "https://auth.example.com", "-auth-require-dpop", "-auth-dpop-nonces"},
			want: with(func(c *config) {
				c.authIssuer, c.authRequireDPoP, c.authDPoPNonces = "https://auth.example.com", true, true
			}),
		},
		{
			name: "hide tools", args: []string{"-auth-issuer", "https://auth.example.com", "-auth-hide-tools"},
			want: with(func(c *config) { c.authIssuer, c.authHideTools = "https://auth.example.com", true }),
		},
		{
			name: "hide tools, VIGIL_AUTH_HIDE_TOOLS",
			env:  map[string]string{"VIGIL_AUTH_ISSUER": "https://auth.example.com", "VIGIL_AUTH_HIDE_TOOLS": "true"},
			want: with(func(c *config) { c.authIssuer, c.authHideTools = "https://auth.example.com", true }),
		},
		{
			name: "hide tools, a rate limit on an unscoped tool",
			args: []string{"-auth-issuer", "https://auth.example.com", "-auth-hide-tools", "-auth-tool-scopes", "sleep=s", "-tool-rate-limits", "echo=5"},
			want: with(func(c *config) {
				c.authIssuer, c.authHideTools = "https://auth.example.com", true
				c.authToolScopes = map[string][]string{"sleep": {"s"}}
				c.toolRateLimits = map[string]flagvalue.ToolRate{"echo": {Rate: 5}}
			}),
		},
		{
			name:    "hide tools, a rate limit on a scoped tool",
			args:    []string{"-auth-issuer", "https://auth.example.com", "-auth-hide-tools", "-auth-tool-scopes", "sleep=s,echo=e", "-tool-rate-limits", "echo=5,sleep=1,countdown=2"},
			wantErr: `-tool-rate-limits on ["echo" "sleep"], which need -auth-tool-scopes, would tell a caller`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := parseConfig(tt.args, func(k string) string { return tt.env[k] }, &out)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// -h documents every flag with its variable, the OTEL_* variables and the
// endpoints, and is not an error for main (flag.ErrHelp).
func TestUsageDocumentsEnvironment(t *testing.T) {
	var out bytes.Buffer
	_, err := parseConfig([]string{"-h"}, func(string) string { return "" }, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	usage := out.String()
	for _, want := range []string{
		"-http address", "(env VIGIL_HTTP_ADDR)", "(env VIGIL_STDIO)", "(env VIGIL_SHUTDOWN_GRACE)", "(env VIGIL_LOG_LEVEL)",
		"(env VIGIL_LOG_FORMAT)", "(env VIGIL_MAX_FRAME)", "(env VIGIL_MAX_BODY)", "(env VIGIL_MAX_SESSIONS)",
		"(env VIGIL_MAX_IN_FLIGHT)", "(env VIGIL_IDLE_TIMEOUT)", "(env VIGIL_ALLOWED_HOSTS)", "(env VIGIL_REQUEST_TIMEOUT)",
		"(env VIGIL_TOOL_CONCURRENCY)", "(env VIGIL_MAX_RESULT_BYTES)", "(env VIGIL_TRACE_RING)", "(env VIGIL_DEBUG)",
		"(env VIGIL_HTTP_IDLE_TIMEOUT)", "(env VIGIL_BODY_READ_TIMEOUT)", "-auth-issuer URL", "(env VIGIL_AUTH_ISSUER)",
		"-auth-resource URI", "(env VIGIL_AUTH_RESOURCE)", "(env VIGIL_AUTH_SCOPES)", "(env VIGIL_AUTH_TOOL_SCOPES)",
		"(env VIGIL_ALLOW_UNAUTHENTICATED)", "(env VIGIL_AUTH_INSECURE_HTTP)", "-admin-http address", "(env VIGIL_ADMIN_HTTP)", "(env VIGIL_AUDIT_LOG)",
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET", "-allow-unauthenticated",
		"VIGIL_CLUSTER_KEY", "VIGIL_CLUSTER_KEY_PREVIOUS",
		"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_SAMPLER",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER",
		"OTEL_METRIC_EXPORT_INTERVAL", "-redis URL", "(env VIGIL_REDIS_URL)", "-gc-headroom MiB", "(env VIGIL_GC_HEADROOM)",
		"(env VIGIL_RATE_LIMIT)", "(env VIGIL_RATE_BURST)", "(env VIGIL_TOOL_RATE_LIMITS)",
		"(env VIGIL_QUOTA_SESSIONS)", "(env VIGIL_QUOTA_EVICT_IDLE)", "(env VIGIL_QUOTA_IN_FLIGHT)", "(env VIGIL_QUOTA_TASKS)", "(env VIGIL_QUOTA_IPV6_PREFIX)", "(env VIGIL_OVERLOAD_TARGET)",
		"-quota-tool-share fraction", "(env VIGIL_QUOTA_TOOL_SHARE)", "-quota-process-share fraction", "(env VIGIL_QUOTA_PROCESS_SHARE)", "-trace-client-context mode", "(env VIGIL_TRACE_CLIENT_CONTEXT)", "(env VIGIL_TRACE_CONTENT)",
		"(env VIGIL_SSE_WRITE_TIMEOUT)", "(env VIGIL_MAX_RESUMPTIONS)", "(env VIGIL_INIT_TIMEOUT)",
		"-quota-bytes bytes", "(env VIGIL_QUOTA_BYTES)", "-memory-budget bytes", "(env VIGIL_MEMORY_BUDGET)",
		"-max-session-state bytes", "(env VIGIL_MAX_SESSION_STATE)", "-max-session-events bytes", "(env VIGIL_MAX_SESSION_EVENTS)", "/mcp", "/metrics", "/healthz", "/readyz", "/debug/vigil", "SIGTERM",
	} {
		assert.Contains(t, usage, want)
	}
	var flags int
	for line := range strings.SplitSeq(usage, "\n") {
		if strings.HasPrefix(line, "  -") {
			flags++
		}
	}
	for _, want := range []string{"(env VIGIL_AUDIT_BLOCK)", "(env VIGIL_AUTH_CACHE_TTL)", "(env VIGIL_AUTH_INTROSPECTION_RATE)", "(env VIGIL_AUTH_HIDE_TOOLS)", "(env VIGIL_AUTH_REQUIRE_DPOP)", "(env VIGIL_AUTH_DPOP_NONCES)"} {
		assert.Contains(t, usage, want)
	}
	for _, want := range []string{"-redis-ca file", "(env VIGIL_REDIS_CA)", "(env VIGIL_REDIS_INSECURE_PLAINTEXT)", "VIGIL_REDIS_PASSWORD", "(env VIGIL_REDIS_OUTAGE_UNREADY)", "VIGIL_REDIS_SENTINEL_PASSWORD"} {
		assert.Contains(t, usage, want)
	}
	assert.Contains(t, usage, "-skills directory")
	assert.Contains(t, usage, "(env VIGIL_SKILLS)")
	assert.Contains(t, usage, "-auth-policy file")
	assert.Contains(t, usage, "(env VIGIL_AUTH_POLICY)")
	for _, want := range []string{
		"-upstream NAME=TARGET", "(env VIGIL_UPSTREAM)", "-upstream-env NAME=K=V", "(env VIGIL_UPSTREAM_ENV)",
		"(env VIGIL_UPSTREAM_SHARED)", "(env VIGIL_UPSTREAM_MAX_PROCESSES)", "(env VIGIL_UPSTREAM_IDLE)",
		"-upstream-unchecked-tools serve", "(env VIGIL_UPSTREAM_UNCHECKED_TOOLS)",
		"-upstream-required NAME[,NAME]", "(env VIGIL_UPSTREAM_REQUIRED)", "-upstream-start-timeout duration", "(env VIGIL_UPSTREAM_START_TIMEOUT)",
	} {
		assert.Contains(t, usage, want)
	}
	for _, want := range []string{"-auth-exchange-endpoint URL", "(env VIGIL_AUTH_EXCHANGE_ENDPOINT)", "-auth-exchange-client-id id", "(env VIGIL_AUTH_EXCHANGE_CLIENT_ID)", "VIGIL_AUTH_EXCHANGE_CLIENT_SECRET"} {
		assert.Contains(t, usage, want)
	}
	for _, want := range []string{"-upstream-header NAME=Header-Name=VALUE", "(env VIGIL_UPSTREAM_HEADER)", "(env VIGIL_UPSTREAM_AUTH)", "-upstream-tools NAME=PATTERN[,PATTERN]", "(env VIGIL_UPSTREAM_TOOLS)"} {
		assert.Contains(t, usage, want)
	}
	assert.Contains(t, usage, "(env VIGIL_CATALOG_SEARCH)")
	for _, want := range []string{"-catalog FILE", "(env VIGIL_CATALOG)", "-catalog-lock FILE", "(env VIGIL_CATALOG_LOCK)", "(env VIGIL_CATALOG_LOCK_WRITE)"} {
		assert.Contains(t, usage, want)
	}
	for _, want := range []string{"-connect-client-id ID", "(env VIGIL_CONNECT_CLIENT_ID)", "-connect-client-secret @FILE", "(env VIGIL_CONNECT_CLIENT_SECRET)", "(env VIGIL_CONNECT_MAX_PENDING)"} {
		assert.Contains(t, usage, want)
	}
	for _, want := range []string{"-upstream-sandbox NAME=PROFILE[,KEY=VALUE...]", "(env VIGIL_UPSTREAM_SANDBOX)", "-upstream-sandbox-dir string", "(env VIGIL_UPSTREAM_SANDBOX_DIR)"} {
		assert.Contains(t, usage, want)
	}
	for _, want := range []string{"(env VIGIL_DISCOVERY)", "-public-url URL", "(env VIGIL_PUBLIC_URL)", "-registry-name name", "(env VIGIL_REGISTRY_NAME)", "-registry-image reference", "(env VIGIL_REGISTRY_IMAGE)", "(env VIGIL_SERVER_JSON)"} {
		assert.Contains(t, usage, want)
	}
	assert.Equal(t, 90, flags, "every flag is listed")
	assert.Equal(t, flags-1, strings.Count(usage, "(env VIGIL_"), "every flag but -version names its variable")
	assert.Contains(t, usage, "  -version\n")
}

// testClusterKey is the cluster key of the shared-mode tests, and
// testClusterKeyB64 its VIGIL_CLUSTER_KEY.
var (
	testClusterKey    = redistest.ClusterKey()
	testClusterKeyB64 = base64.StdEncoding.EncodeToString(testClusterKey)
)

func TestRequestStateKeyFromEnvironment(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	env := map[string]string{"VIGIL_REQUEST_STATE_KEY": base64.StdEncoding.EncodeToString(key)}
	cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, key, cfg.stateKey)

	env["VIGIL_REQUEST_STATE_KEY"] = base64.StdEncoding.EncodeToString(key[:16])
	_, err = parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.ErrorContains(t, err, "at least 32 bytes")
	env["VIGIL_REQUEST_STATE_KEY"] = "not base64!"
	_, err = parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.Error(t, err)
}

// Without a request state key of its own, vigil seals requestState under
// the cluster key, which every replica shares already.
func TestRequestStateKeyFromClusterKey(t *testing.T) {
	env := map[string]string{"VIGIL_CLUSTER_KEY": testClusterKeyB64}
	cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, testClusterKey, cfg.stateKey)

	own := make([]byte, 32)
	env["VIGIL_REQUEST_STATE_KEY"] = base64.StdEncoding.EncodeToString(own)
	cfg, err = parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, own, cfg.stateKey, "an explicit request state key wins")

	delete(env, "VIGIL_REQUEST_STATE_KEY")
	env["VIGIL_CLUSTER_KEY"] = "too short"
	_, err = parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.ErrorContains(t, err, "VIGIL_CLUSTER_KEY must be the base64 of at least 32 random bytes")

	cfg, err = parseConfig(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Nil(t, cfg.stateKey, "neither: a random key per process")
}

// The introspection secret is read from the environment only, and never
// shows in the usage, whatever the environment holds.
func TestIntrospectionSecretNotPrinted(t *testing.T) {
	env := map[string]string{
		"VIGIL_AUTH_ISSUER":                      "https://issuer.example",
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID":     "vigil",
		"VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET": "do-not-print-me",
	}
	var out bytes.Buffer
	_, err := parseConfig([]string{"-h"}, func(k string) string { return env[k] }, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.NotContains(t, out.String(), "do-not-print-me")
	_, err = parseConfig([]string{"-auth-introspection-client-secret", "x"}, func(k string) string { return env[k] }, io.Discard)
	require.ErrorContains(t, err, "flag provided but not defined", "a secret is no flag")
	cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "do-not-print-me", cfg.introspectionSecret)
	assert.True(t, cfg.authEnabled())
}

func TestCheckExposure(t *testing.T) {
	t.Parallel()
	const auth, resource = "https://issuer.example", "https://mcp.example/mcp"
	tests := []struct {
		name                 string
		addr                 string
		issuer, resource     string
		admin                string
		allowUnauthenticated bool
		stdio                bool
		hosts                []string
		wantErr, wantWarning string
	}{
		{name: "loopback v4", addr: "127.0.0.1:8080"},
		{name: "loopback other", addr: "127.1.2.3:0"},
		{name: "loopback v6", addr: "[::1]:8080"},
		{name: "localhost", addr: "localhost:8080"},
		{name: "LOCALHOST", addr: "LOCALHOST:8080"},
		{name: "all v4", addr: "0.0.0.0:8080", wantErr: "-auth-issuer URL (OAuth 2.1 authorization) or, if something in front of vigil authorizes requests, -allow-unauthenticated"},
		{name: "all, empty host", addr: ":8080", wantErr: "-allow-unauthenticated"},
		{name: "all v6", addr: "[::]:8080", wantErr: "-auth-issuer URL"},
		{name: "LAN address", addr: "192.168.1.10:8080", wantErr: "is not a loopback address"},
		{name: "host name", addr: "mcp.internal:8080", wantErr: "is not a loopback address"},
		{name: "allowed", addr: "0.0.0.0:8080", allowUnauthenticated: true, hosts: []string{"mcp.example"}, admin: "127.0.0.1:9090", wantWarning: "without authorization"},
		{name: "unauthenticated without allowed hosts", addr: "0.0.0.0:8080", allowUnauthenticated: true, admin: "127.0.0.1:9090", wantErr: "\n  -allowed-hosts NAMES"},
		{name: "unauthenticated without an admin listener", addr: "192.168.1.10:8080", allowUnauthenticated: true, hosts: []string{"mcp.example"}, wantErr: "\n  -admin-http ADDR"},
		{name: "allowed on loopback", addr: "127.0.0.1:8080", allowUnauthenticated: true},
		{name: "stdio", addr: "0.0.0.0:8080", stdio: true},
		{name: "auth with resource", addr: "0.0.0.0:8080", issuer: auth, resource: resource, admin: ":9090"},
		{name: "auth on a LAN address", addr: "192.168.1.10:8080", issuer: auth, admin: "127.0.0.1:9090"},
		{name: "auth on loopback keeps the endpoints beside /mcp", addr: "127.0.0.1:8080", issuer: auth},
		{name: "auth on a public address without an admin listener", addr: "0.0.0.0:8080", issuer: auth, resource: resource, wantErr: "\n  -admin-http ADDR"},
		{name: "auth on a LAN address without an admin listener", addr: "192.168.1.10:8080", issuer: auth, wantErr: "/debug/vigil on a listener of their own"},
		{name: "auth on a wildcard without resource", addr: "0.0.0.0:8080", issuer: auth, wantErr: "\n  -auth-resource URL"},
		{name: "auth on every address without resource", addr: ":8080", issuer: auth, wantErr: "\n  -auth-resource URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			cfg.httpAddr, cfg.authIssuer, cfg.authResource, cfg.adminAddr = tt.addr, tt.issuer, tt.resource, tt.admin
			cfg.allowUnauthenticated, cfg.stdio, cfg.allowedHosts = tt.allowUnauthenticated, tt.stdio, tt.hosts
			warning, err := checkExposure(cfg, nil)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.wantWarning == "" {
				assert.Empty(t, warning)
			} else {
				assert.Contains(t, warning, tt.wantWarning)
			}
		})
	}
}

// vigil with no flags on a public address refuses to start, before it
// listens, naming the flags to add.
func TestRunRefusesPublicAddressWithoutAuth(t *testing.T) {
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"-http", "0.0.0.0:0"}, func(string) string { return "" }, &stderr)
	require.ErrorContains(t, err, "-auth-issuer URL")
	require.ErrorContains(t, err, "-allow-unauthenticated")
}

// One refusal names every flag missing, whichever way the flags lean,
// and ends with an example: the command given, completed.
func TestCheckExposureNamesEveryMissingFlag(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		args        []string
		flags       []string // every one in the one refusal
		wantExample string
	}{
		{
			name:        "nothing but -http",
			args:        []string{"-http", "0.0.0.0:8080"},
			flags:       []string{"-auth-issuer URL (OAuth 2.1 authorization) or, if something in front of vigil authorizes requests, -allow-unauthenticated", "-allowed-hosts NAMES", "-admin-http ADDR"},
			wantExample: "vigil -http 0.0.0.0:8080 -allow-unauthenticated -allowed-hosts mcp.host -admin-http 127.0.0.1:9090",
		},
		{
			name:        "unauthenticated, nothing else",
			args:        []string{"-http", ":8080", "-allow-unauthenticated", "-skills", "my skills"},
			flags:       []string{"-allowed-hosts NAMES", "-admin-http ADDR"},
			wantExample: "vigil -http :8080 -allow-unauthenticated -skills 'my skills' -allowed-hosts mcp.host -admin-http 127.0.0.1:9090",
		},
		{
			name:        "authorized on a wildcard, nothing else",
			args:        []string{"-http", "0.0.0.0:8080", "-auth-issuer", "https://issuer.example"},
			flags:       []string{"-auth-resource URL", "-admin-http ADDR"},
			wantExample: "vigil -http 0.0.0.0:8080 -auth-issuer https://issuer.example -auth-resource https://mcp.host/mcp -admin-http 127.0.0.1:9090",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := exposure.Listener{HTTPAddr: tt.args[1], Args: tt.args, ExampleHost: "mcp.host"}
			l.Authorized = slices.Contains(tt.args, "-auth-issuer")
			l.AllowUnauthenticated = slices.Contains(tt.args, "-allow-unauthenticated")
			_, err := exposure.Check(l)
			require.Error(t, err)
			for _, f := range tt.flags {
				assert.Contains(t, err.Error(), "\n  "+f, "each missing flag on a line of its own")
			}
			assert.True(t, strings.HasSuffix(err.Error(), "for example:\n  "+tt.wantExample), "%s", err)
		})
	}
}

func TestResourceURI(t *testing.T) {
	t.Parallel()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	for _, tt := range []struct{ name, httpAddr, resource, want string }{
		{name: "given", httpAddr: "127.0.0.1:0", resource: "https://mcp.example/mcp", want: "https://mcp.example/mcp"},
		{name: "loopback, port chosen", httpAddr: "127.0.0.1:0", want: "http://127.0.0.1:4242/mcp"},
		{name: "name kept", httpAddr: "localhost:0", want: "http://localhost:4242/mcp"},
		{name: "v6", httpAddr: "[::1]:0", want: "http://[::1]:4242/mcp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaultConfig()
			cfg.httpAddr, cfg.authResource = tt.httpAddr, tt.resource
			assert.Equal(t, tt.want, resourceURI(cfg, addr))
		})
	}
}

// Scopes for a tool that is not registered are an error naming it.
func TestToolScopesNameRegisteredTools(t *testing.T) {
	t.Parallel()
	srv := server.New()
	require.NoError(t, addDemoTools(srv, map[string][]string{"echo": {"a"}, "sleep": {"b", "c"}}))
	err := addDemoTools(server.New(), map[string][]string{"echo": {"a"}, "ecoh": {"a"}, "rm": {"b"}})
	require.ErrorContains(t, err, `-auth-tool-scopes names unknown tools ["ecoh" "rm"]`)
	assert.ErrorContains(t, err, `"confirm_action" "convert_temperature" "countdown" "echo" "sleep"`)
}
