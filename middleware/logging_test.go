package middleware_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// TestLogging runs requests through Logging (under Metrics, above the
// middleware of the case) in fake time and checks every record, attribute
// by attribute, with the session id replaced by SID.
func TestLogging(t *testing.T) {
	t.Parallel()
	const initRecord = "INFO request method=initialize request_id=1 session_id=SID duration_seconds=0 outcome=ok"
	call := func(id, tool string) string {
		return "request method=tools/call tool=" + tool + " request_id=" + id + " session_id=SID"
	}
	tests := []struct {
		name  string
		level slog.Leveler // the capture's; nil: debug
		opts  []middleware.InstrumentationOption
		inner []server.Middleware // below Logging
		srv   []server.Option     // the server's own
		wrap  func(transport.Conn) transport.Conn
		run   func(t *testing.T, r *rig)
		want  []string
	}{
		{
			name: "ok",
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "echo", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
				synctest.Wait() // the record follows the written response
				r.Request(3, "ping", nil)
				require.Nil(t, r.RecvResponseTo(3).Error)
			},
			want: []string{
				initRecord,
				"INFO " + call("2", "echo") + " duration_seconds=0 outcome=ok",
				"INFO request method=ping request_id=3 session_id=SID duration_seconds=0 outcome=ok",
			},
		},
		{
			name: "string ids, quoted as slog quotes them",
			run: func(t *testing.T, r *rig) {
				for _, id := range []string{"req-7", "a b=\"c\"", ""} {
					r.Send(&transport.Request{ID: transport.StringID(id), Method: "ping"})
					require.Nil(t, r.RecvResponse().Error)
					synctest.Wait() // the record follows the written response
				}
			},
			want: []string{
				initRecord,
				"INFO request method=ping request_id=req-7 session_id=SID duration_seconds=0 outcome=ok",
				`INFO request method=ping request_id=a b="c" session_id=SID duration_seconds=0 outcome=ok`,
				`INFO request method=ping request_id= session_id=SID duration_seconds=0 outcome=ok`,
			},
		},
		{
			name: "duration since receipt",
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "sleep", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{initRecord, "INFO " + call("2", "sleep") + " duration_seconds=1.5 outcome=ok"},
		},
		{
			name: "tool error",
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "fail", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{initRecord, "INFO " + call("2", "fail") + " duration_seconds=0 outcome=ok tool_error=true error_type=tool_error"},
		},
		{
			name: "arguments the tool's schema refuses: a tool error",
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "strict", `{}`)
				require.Nil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{initRecord, "INFO " + call("2", "strict") + " duration_seconds=0 outcome=ok tool_error=true error_type=invalid_arguments"},
		},
		{
			name: "JSON-RPC error",
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "nope", nil)
				require.NotNil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{initRecord, "WARN " + call("2", "nope") + ` duration_seconds=0 outcome=error code=-32602 error=mcp error -32602: unknown tool: "nope"`},
		},
		{
			name: "timeout",
			srv:  []server.Option{server.WithTimeout(time.Second)},
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "block", nil)
				require.NotNil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{initRecord, "WARN " + call("2", "block") + " duration_seconds=1 outcome=error code=-32001 error=mcp: handler timeout cause=timeout error_type=-32001"},
		},
		{
			name:  "recovered panic",
			inner: []server.Middleware{middleware.Recover(nil)},
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "panic", nil)
				require.NotNil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{initRecord, "WARN " + call("2", "panic") + " duration_seconds=0 outcome=error code=-32603 error=panic: boom error_type=-32603"},
		},
		{
			name: "client cancel",
			run: func(_ *testing.T, r *rig) {
				r.SendCallTool(2, "block", nil)
				time.Sleep(time.Second)
				r.Notify("notifications/cancelled", map[string]any{"requestId": 2})
				synctest.Wait()
			},
			want: []string{initRecord, "INFO " + call("2", "block") + " duration_seconds=1 outcome=cancelled cause=client_cancel reason=cancelled error_type=cancelled"},
		},
		{
			name:  "client cancel at the default level, Info: its line with outcome and cause",
			level: slog.LevelInfo,
			run: func(_ *testing.T, r *rig) {
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
				r.Notify("notifications/cancelled", map[string]any{"requestId": 2})
				synctest.Wait()
			},
			want: []string{initRecord, "INFO " + call("2", "block") + " duration_seconds=0 outcome=cancelled cause=client_cancel reason=cancelled error_type=cancelled"},
		},
		{
			name: "transport close",
			run: func(_ *testing.T, r *rig) {
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
			},
			want: []string{initRecord, "INFO " + call("2", "block") + " duration_seconds=0 outcome=cancelled cause=transport_close reason=writer_closed error_type=cancelled"},
		},
		{
			name: "dropped",
			wrap: func(c transport.Conn) transport.Conn { return &failingConn{Conn: c} },
			run: func(_ *testing.T, r *rig) {
				synctest.Wait()
				r.failing().fail.Store(true)
				r.SendCallTool(2, "echo", nil)
				synctest.Wait()
			},
			want: []string{initRecord, "INFO " + call("2", "echo") + " duration_seconds=0 outcome=dropped reason=peer_gone error=test: write: transport: peer gone error_type=dropped"},
		},
		{
			name:  "levels the logger does not enable are not logged",
			level: slog.LevelWarn,
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "echo", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
				r.SendCallTool(3, "nope", nil)
				require.NotNil(t, r.RecvResponseTo(3).Error)
			},
			want: []string{"WARN " + call("3", "nope") + ` duration_seconds=0 outcome=error code=-32602 error=mcp error -32602: unknown tool: "nope"`},
		},
		{
			name: "LogLevelFunc",
			opts: []middleware.InstrumentationOption{middleware.WithLogLevel(func(req *server.Request, _ server.Outcome) slog.Level {
				if req.Method == "initialize" {
					return slog.LevelDebug - 1 // below the capture's level
				}
				return slog.LevelError
			})},
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(2, "echo", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
			},
			want: []string{"ERROR " + call("2", "echo") + " duration_seconds=0 outcome=ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				level := tt.level
				if level == nil {
					level = slog.LevelDebug
				}
				logs := newCapture(level)
				// The same records through slog's TextHandler and through
				// a TextLineHandler, which gets them in text.
				var viaRecord, viaText bytes.Buffer
				textOpts := &slog.HandlerOptions{Level: level}
				mw := append([]server.Middleware{
					middleware.Logging(slog.New(logs), tt.opts...),
					middleware.Logging(slog.New(middleware.LogHandler(slog.NewTextHandler(&viaRecord, textOpts))), tt.opts...),
					middleware.Logging(slog.New(middleware.LogHandler(newTextLines(&viaText, textOpts))), tt.opts...),
				}, tt.inner...)
				r := newRig(t, mw, tt.srv...).start(tt.wrap)
				r.Initialize("", nil)
				synctest.Wait() // initialize's record comes first
				sid := sessionID(t, r.srv)
				tt.run(t, r)
				r.close()
				assert.Equal(t, tt.want, logs.lines(sid, "SID"))
				assert.Equal(t, len(tt.want), strings.Count(viaRecord.String(), "\n"))
				assert.Equal(t, viaRecord.String(), viaText.String(), "the text lines are the records'")
			})
		})
	}
}

// TestLoggingWithLogHandler checks that LogHandler adds no second
// request_id or session_id to the records of Logging, and that a nil
// logger makes Logging the identity.
func TestLoggingWithLogHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		logs := newCapture(slog.LevelDebug)
		logger := slog.New(middleware.LogHandler(logs))
		r := newRig(t, []server.Middleware{middleware.Logging(nil), middleware.Logging(logger)}).start(nil)
		r.Initialize("", nil)
		synctest.Wait()
		sid := sessionID(t, r.srv)
		r.SendCallTool(2, "echo", nil)
		require.Nil(t, r.RecvResponseTo(2).Error)
		synctest.Wait()
		logger.InfoContext(context.Background(), "outside a request")
		r.close()
		assert.Equal(t, []string{
			"INFO request method=initialize request_id=1 session_id=SID duration_seconds=0 outcome=ok",
			"INFO request method=tools/call tool=echo request_id=2 session_id=SID duration_seconds=0 outcome=ok",
			"INFO outside a request",
		}, logs.lines(sid, "SID"))
	})
}

// textLines is a TextLineHandler that writes each line as slog's
// TextHandler writes a record: the time, level and message by the
// TextHandler itself, the attributes as given.
type textLines struct {
	slog.Handler // the TextHandler, to out
	out          io.Writer
	opts         *slog.HandlerOptions
}

func newTextLines(out io.Writer, opts *slog.HandlerOptions) *textLines {
	return &textLines{Handler: slog.NewTextHandler(out, opts), out: out, opts: opts}
}

func (h *textLines) HandleTextLine(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []byte) error {
	var prefix bytes.Buffer
	if err := slog.NewTextHandler(&prefix, h.opts).Handle(ctx, slog.NewRecord(t, level, msg, 0)); err != nil {
		return err
	}
	line := append(bytes.TrimSuffix(prefix.Bytes(), []byte("\n")), attrs...)
	_, err := h.out.Write(append(line, '\n'))
	return err
}

// TestLoggingTextLineTraceIDs: inside Tracing, a TextLineHandler's lines
// carry the trace and span ids LogHandler adds to the records, as slog's
// TextHandler writes them.
func TestLoggingTextLineTraceIDs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tp := sdktrace.NewTracerProvider()
		defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
		var viaRecord, viaText bytes.Buffer
		r := newRig(t, []server.Middleware{
			middleware.Tracing(middleware.WithTracerProvider(tp)),
			middleware.Logging(slog.New(middleware.LogHandler(slog.NewTextHandler(&viaRecord, nil)))),
			middleware.Logging(slog.New(middleware.LogHandler(newTextLines(&viaText, nil)))),
		}).start(nil)
		r.Initialize("", nil)
		r.SendCallTool(2, "echo", nil)
		require.Nil(t, r.RecvResponseTo(2).Error)
		synctest.Wait()
		r.close()
		assert.Equal(t, 2, strings.Count(viaRecord.String(), " trace_id="), viaRecord.String())
		assert.Equal(t, 2, strings.Count(viaRecord.String(), " span_id="), viaRecord.String())
		assert.Equal(t, viaRecord.String(), viaText.String())
	})
}
