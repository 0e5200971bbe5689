// Package logsetup makes vigil's logger ([New]) and sends the
// OpenTelemetry SDK's errors to it ([OTelErrors]). Only cmd/vigil imports
// it.
package logsetup

import (
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"

	"github.com/vigil-mcp/vigil/internal/invisible"
	"github.com/vigil-mcp/vigil/internal/slogtext"
)

// New returns the logger of -log-format (json, else text) at level,
// writing to w. The invisible characters a client chose (bidirectional
// controls) are escaped in either format: the text format quotes them
// (\u202e), and the JSON lines pass through invisible.Writer, since
// encoding them is not slog.JSONHandler's concern.
func New(format string, level slog.Leveler, w io.Writer) *slog.Logger {
	var h slog.Handler = slogtext.NewHandler(w, level) // slog.TextHandler's output, cheaper
	if format == "json" {
		h = slog.NewJSONHandler(invisible.Writer{W: w}, &slog.HandlerOptions{Level: level, ReplaceAttr: durationSeconds})
	}
	return slog.New(h)
}

// durationSeconds makes a duration attribute a number of seconds, its key
// ending in _seconds, as every duration vigil logs is: JSON would else
// print it in nanoseconds ("grace":10000000000). Vigil's packages log
// durations in seconds already; this catches the ones they may add.
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	key := a.Key
	if !strings.HasSuffix(key, "_seconds") {
		key += "_seconds"
	}
	return slog.Float64(key, a.Value.Duration().Seconds())
}

// OTelErrors sends the OpenTelemetry SDK's errors (a failed export, a bad
// sampler setting) to logger instead of the standard log package. It sets
// the global error handler: the binary calls it, once.
func OTelErrors(logger *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry", "error", err)
	}))
}
