package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// notificationParams reads the next message, requires a notification of
// method, and returns its params.
func notificationParams(t testing.TB, h *harness, method string) string {
	t.Helper()
	m := h.Recv()
	n, ok := m.(*transport.Request)
	require.True(t, ok, "want a notification, got %#v", m)
	require.False(t, n.ID.IsValid(), "want a notification, got request %s", n.Method)
	require.Equal(t, method, n.Method)
	return string(n.Params)
}

// statelessMeta is the _meta of a 2026-07-28 request, plus extra keys.
func statelessMeta(caps any, extra map[string]any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	m := map[string]any{
		vocab.MetaProtocolVersion:    protocol.Version20260728,
		vocab.MetaClientCapabilities: caps,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// everyLevel logs one record at each RFC 5424 severity, named after it.
func everyLevel(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	log := server.ClientLogger(ctx)
	for _, l := range []struct {
		level slog.Level
		name  string
	}{
		{slog.LevelDebug, "debug"},
		{slog.LevelInfo, "info"},
		{server.LevelNotice, "notice"},
		{slog.LevelWarn, "warning"},
		{slog.LevelError, "error"},
		{server.LevelCritical, "critical"},
		{server.LevelAlert, "alert"},
		{server.LevelEmergency, "emergency"},
	} {
		log.Log(ctx, l.level, l.name)
	}
	return server.Text("logged"), nil
}

var allLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// expectLogs reads one notifications/message per level, exactly.
func expectLogs(t *testing.T, h *harness, levels []string) {
	t.Helper()
	for _, l := range levels {
		assert.JSONEq(t, `{"level":"`+l+`","data":{"message":"`+l+`"}}`, notificationParams(t, h, "notifications/message"))
	}
}

func TestLoggingSetLevelFilters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level string // "" sends no logging/setLevel
		opts  []server.Option
		want  []string
	}{
		{name: "default is info", want: allLevels[1:]},
		{name: "configured default", opts: []server.Option{server.WithClientLogLevel(slog.LevelError)}, want: allLevels[4:]},
		{name: "default off", opts: []server.Option{server.WithClientLogLevel(server.LevelEmergency + 1)}, want: nil},
		{name: "debug", level: "debug", want: allLevels},
		{name: "notice", level: "notice", want: allLevels[2:]},
		{name: "warning", level: "warning", want: allLevels[3:]},
		{name: "critical", level: "critical", want: allLevels[5:]},
		{name: "emergency", level: "emergency", want: allLevels[7:]},
		{name: "setLevel overrides the default", level: "alert", opts: []server.Option{server.WithClientLogLevel(server.LevelEmergency + 1)}, want: allLevels[6:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.opts...)
				h.addTool("log", everyLevel)
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				if tc.level != "" {
					h.Request(2, "logging/setLevel", map[string]any{"level": tc.level})
					assert.JSONEq(t, `{}`, string(h.RecvResult(2)))
				}
				h.SendCallTool(3, "log", `{}`)
				expectLogs(t, h, tc.want)
				text, isErr := toolText(t, h.RecvResult(3))
				assert.Equal(t, "logged", text)
				assert.False(t, isErr)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

func TestLoggingCapabilityAndInvalidLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		h.Request(1, "initialize", map[string]any{"protocolVersion": protocol.Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		var init struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(1), &init))
		assert.JSONEq(t, `{}`, string(init.Capabilities["logging"]))
		h.Notify("notifications/initialized", nil)

		for i, params := range []any{
			map[string]any{"level": "verbose"},
			map[string]any{"level": "INFO"},
			map[string]any{"level": 3},
			map[string]any{},
			nil,
			`[]`,
		} {
			id := int64(10 + i)
			h.Request(id, "logging/setLevel", params)
			assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(id).Code, "params %v", params)
		}
		h.Request(20, "ping", nil) // the session still serves
		h.RecvResult(20)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The level is per session: one session's setLevel does not change
// another's.
func TestLoggingLevelIsPerSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("log", everyLevel)
		h.start()
		h2 := h.second()
		h.Initialize(protocol.Version20251125, nil)
		h2.Initialize(protocol.Version20251125, nil)
		h.Request(2, "logging/setLevel", map[string]any{"level": "emergency"})
		h.RecvResult(2)

		h2.SendCallTool(3, "log", `{}`)
		expectLogs(t, h2, allLevels[1:])
		h2.RecvResult(3)
		h.SendCallTool(3, "log", `{}`)
		expectLogs(t, h, allLevels[7:])
		h.RecvResult(3)

		require.NoError(t, h.Close())
		require.NoError(t, h2.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h2.Wait())
	})
}

// errText is an error with a fixed message.
type errText string

func (e errText) Error() string { return string(e) }

// unencodable fails to encode as JSON.
type unencodable struct{ C chan int }

func (unencodable) String() string { return "unencodable" }

func TestLoggingDataShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  func(ctx context.Context, l *slog.Logger)
		want string
	}{
		{
			name: "plain message",
			log:  func(ctx context.Context, l *slog.Logger) { l.InfoContext(ctx, "hello") },
			want: `{"level":"info","data":{"message":"hello"}}`,
		},
		{
			name: "attribute kinds",
			log: func(ctx context.Context, l *slog.Logger) {
				l.WarnContext(ctx, "kinds", "s", "x", "i", -3, "u", uint64(7), "f", 1.5, "b", true,
					"d", 1500*time.Millisecond, "t", time.Date(2025, 11, 25, 1, 2, 3, 0, time.UTC),
					"err", errors.New("boom"), "nan", math.NaN(), "inf", math.Inf(1),
					"obj", map[string]int{"k": 1}, "bad", unencodable{})
			},
			want: `{"level":"warning","data":{"message":"kinds","s":"x","i":-3,"u":7,"f":1.5,"b":true,
				"d":"1.5s","t":"2025-11-25T01:02:03Z","err":"boom","nan":"NaN","inf":"+Inf","obj":{"k":1},"bad":"unencodable"}}`,
		},
		{
			name: "groups nest and the logger name is lifted",
			log: func(ctx context.Context, l *slog.Logger) {
				l.With(server.LoggerKey, "db", "top", 1).WithGroup("req").With("id", 7).
					ErrorContext(ctx, "failed", "err", errText("no rows"), slog.Group("q", "table", "users", "rows", 0))
			},
			want: `{"level":"error","logger":"db","data":{"message":"failed","top":1,"req":{"id":7,"err":"no rows","q":{"table":"users","rows":0}}}}`,
		},
		{
			name: "empty groups and attributes left out",
			log: func(ctx context.Context, l *slog.Logger) {
				l.WithGroup("empty").WithGroup("").Log(ctx, server.LevelNotice, "n", slog.Attr{}, slog.Group("none"))
			},
			want: `{"level":"notice","data":{"message":"n"}}`,
		},
		{
			name: "inline group and a logger key inside a group stays data",
			log: func(ctx context.Context, l *slog.Logger) {
				l.WithGroup("g").InfoContext(ctx, "m", slog.Group("", "a", 1), server.LoggerKey, "inner")
			},
			want: `{"level":"info","data":{"message":"m","g":{"a":1,"logger":"inner"}}}`,
		},
		{
			name: "a logger key in the record names the logger",
			log: func(ctx context.Context, l *slog.Logger) {
				l.Log(ctx, server.LevelCritical, "c", server.LoggerKey, "billing", "n", 2)
			},
			want: `{"level":"critical","logger":"billing","data":{"message":"c","n":2}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.addTool("log", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
					tc.log(ctx, server.ClientLogger(ctx))
					return server.Text("ok"), nil
				})
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				h.SendCallTool(2, "log", `{}`)
				assert.JSONEq(t, tc.want, notificationParams(t, h, "notifications/message"))
				h.RecvResult(2)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// In 2026-07-28 the level comes with each request: none, none sent.
func TestLoggingPerRequestLevel2026(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level any // nil: no logLevel key
		want  []string
		code  protocol.Code // non-zero: the request is refused
	}{
		{name: "no logLevel sends nothing", want: nil},
		{name: "debug", level: "debug", want: allLevels},
		{name: "error", level: "error", want: allLevels[4:]},
		{name: "emergency", level: "emergency", want: allLevels[7:]},
		{name: "unknown level", level: "banana", code: protocol.CodeInvalidParams},
		{name: "not a string", level: 3, code: protocol.CodeInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, server.WithClientLogLevel(slog.LevelDebug)) // the session default does not apply
				h.addTool("log", everyLevel)
				h.start()
				extra := map[string]any{}
				if tc.level != nil {
					extra[vocab.MetaLogLevel] = tc.level
				}
				h.Request(1, "tools/call", map[string]any{"name": "log", "arguments": map[string]any{}, "_meta": statelessMeta(nil, extra)})
				if tc.code != 0 {
					assert.Equal(t, int64(tc.code), h.RecvError(1).Code)
				} else {
					expectLogs(t, h, tc.want)
					h.RecvResult(1)
				}
				h.Request(2, "logging/setLevel", map[string]any{"level": "debug", "_meta": statelessMeta(nil, nil)})
				assert.Equal(t, int64(protocol.CodeMethodNotFound), h.RecvError(2).Code)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// messageLog is a slog.Handler that keeps the messages it is given.
type messageLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *messageLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *messageLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *messageLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *messageLog) WithGroup(string) slog.Handler      { return l }
func (l *messageLog) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// Records over the session's rate limit are dropped and counted; the
// bucket refills with (fake) time.
func TestLoggingRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srvLog := &messageLog{}
		h := newHarness(t, server.WithClientLogRate(10, 5), server.WithLogger(slog.New(srvLog)))
		h.addTool("flood", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			log := server.ClientLogger(ctx)
			for range 20 {
				log.Info("burst")
			}
			time.Sleep(300 * time.Millisecond) // refills 3 tokens
			for range 10 {
				log.Info("later")
			}
			return server.Text("done"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "flood", `{}`)
		for range 5 {
			assert.JSONEq(t, `{"level":"info","data":{"message":"burst"}}`, notificationParams(t, h, "notifications/message"))
		}
		for range 3 {
			assert.JSONEq(t, `{"level":"info","data":{"message":"later"}}`, notificationParams(t, h, "notifications/message"))
		}
		h.RecvResult(2) // nothing else came before the response
		ss := h.srv.Sessions()[0]
		assert.Equal(t, int64(15+7), ss.LogNotificationsDropped())
		assert.Equal(t, 2, srvLog.count("client log notifications over the rate limit: dropping"), "one debug line per streak")
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A logger kept past its request, or past its session, sends nothing and
// does not panic.
func TestLoggingAfterCompletionIsNoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		kept := make(chan *slog.Logger, 1)
		h.addTool("keep", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			kept <- server.ClientLogger(ctx)
			return server.Text("kept"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "keep", `{}`)
		h.RecvResult(2)
		log := <-kept
		assert.False(t, log.Enabled(context.Background(), server.LevelEmergency))
		log.Error("too late")
		h.Request(3, "ping", nil)
		h.RecvResult(3) // the next message is the ping's answer: no notification

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		log.Error("session over")
		server.ClientLogger(context.Background()).Error("no request: discarded")
	})
}
