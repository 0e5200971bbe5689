// Package auditlog opens the destination of vigil's audit log (-audit-log),
// one JSON line per tool call: standard output or a file, written in the
// background. Only cmd/vigil imports it.
package auditlog

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
)

// Open opens the audit log of vigil's -audit-log, path: nil for "", standard
// output for "-", else the file, appended to (created 0600). Lines are
// written in the background (asyncwriter), so that no call waits on the
// file; a line that finds the buffer full waits up to block for room, then
// is dropped and counted (mcp_server_audit_lines_dropped_total), and
// closeLog, which writes what is left and closes the file, logs how many
// were.
func Open(path string, block time.Duration, logger *slog.Logger) (w *asyncwriter.Writer, closeLog func(), err error) {
	var out io.Writer = os.Stdout
	closeOut := func() {}
	switch path {
	case "":
		return nil, func() {}, nil
	case "-":
	default:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("-audit-log: %w", err)
		}
		out, closeOut = f, func() { _ = f.Close() }
	}
	aw := asyncwriter.New(out, asyncwriter.WithBlock(block))
	return aw, func() {
		_ = aw.Close()
		closeOut()
		if n := aw.Dropped(); n > 0 {
			logger.Warn("audit log lines dropped: the audit log's destination was too slow", "lines", n, "audit_log", path)
		}
	}, nil
}
