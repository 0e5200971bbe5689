package main

import (
	"bytes"
	"encoding/base64"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// defaultConfig is the configuration with no flags and no environment.
func defaultConfig() config {
	return config{
		httpAddr:        "127.0.0.1:8080",
		grace:           10 * time.Second,
		logLevel:        slog.LevelInfo,
		logFormat:       "text",
		maxFrame:        4 << 20,
		maxBody:         4 << 20,
		maxSessions:     10000,
		maxInFlight:     256,
		idleTimeout:     30 * time.Minute,
		requestTimeout:  time.Minute,
		toolConcurrency: 256,
		traceRing:       100,
		debug:           true,
	}
}

func TestParseConfig(t *testing.T) {
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
				"-max-frame", "1024", "-max-body", "2048", "-max-sessions", "5", "-max-in-flight", "7",
				"-idle-timeout", "0", "-allowed-hosts", "mcp.example.com, vigil.internal:8080", "-request-timeout", "0",
				"-tool-concurrency", "0", "-trace-ring", "0", "-debug=false",
			},
			want: config{
				httpAddr: ":9090", stdio: true, grace: 3 * time.Second, logLevel: slog.LevelDebug, logFormat: "json",
				maxFrame: 1024, maxBody: 2048, maxSessions: 5, maxInFlight: 7,
				allowedHosts: []string{"mcp.example.com", "vigil.internal:8080"},
			},
		},
		{
			name: "environment",
			env: map[string]string{
				"VIGIL_HTTP_ADDR": "0.0.0.0:80", "VIGIL_STDIO": "true", "VIGIL_SHUTDOWN_GRACE": "1m",
				"VIGIL_LOG_LEVEL": "WARN", "VIGIL_LOG_FORMAT": "json", "VIGIL_MAX_FRAME": "10", "VIGIL_MAX_BODY": "20",
				"VIGIL_MAX_SESSIONS": "30", "VIGIL_MAX_IN_FLIGHT": "40", "VIGIL_IDLE_TIMEOUT": "5m",
				"VIGIL_ALLOWED_HOSTS": "a.example", "VIGIL_REQUEST_TIMEOUT": "2s", "VIGIL_TOOL_CONCURRENCY": "3",
				"VIGIL_TRACE_RING": "9", "VIGIL_DEBUG": "false",
			},
			want: config{
				httpAddr: "0.0.0.0:80", stdio: true, grace: time.Minute, logLevel: slog.LevelWarn, logFormat: "json",
				maxFrame: 10, maxBody: 20, maxSessions: 30, maxInFlight: 40, idleTimeout: 5 * time.Minute,
				allowedHosts: []string{"a.example"}, requestTimeout: 2 * time.Second, toolConcurrency: 3, traceRing: 9,
			},
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
		"(env VIGIL_TOOL_CONCURRENCY)", "(env VIGIL_TRACE_RING)", "(env VIGIL_DEBUG)",
		"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_SAMPLER",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED",
		"/mcp", "/metrics", "/healthz", "/readyz", "/debug/vigil", "SIGTERM",
	} {
		assert.Contains(t, usage, want)
	}
	var flags int
	for line := range strings.SplitSeq(usage, "\n") {
		if strings.HasPrefix(line, "  -") {
			flags++
		}
	}
	assert.Equal(t, 15, flags, "every flag is listed")
	assert.Equal(t, flags, strings.Count(usage, "(env VIGIL_"), "every flag names its variable")
}

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
