package benchservice

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Recorded is what the shipped vigil recorded of a benchmark, read after
// the load: its metrics, its log and its trace ring.
type Recorded struct {
	Finished     int64 // mcp_server_requests_finished_total, summed over its series
	LogLines     int64 // "request" records in the log
	LinesDropped int64 // mcp_server_log_lines_dropped_total
	Traces       int   // traces kept in the in-memory ring (/debug/vigil)
}

// Complete reports whether every request finished is in the log or counted
// as a dropped line, and the ring holds traces.
func (r Recorded) Complete() bool {
	return r.Finished > 0 && r.LogLines+r.LinesDropped == r.Finished && r.Traces > 0
}

// String describes r in one line.
func (r Recorded) String() string {
	verdict := "every request recorded"
	if !r.Complete() {
		verdict = "MISMATCH"
	}
	return fmt.Sprintf("metrics %s requests finished; log %s request lines + %s dropped; ring %d traces: %s",
		Thousands(r.Finished), Thousands(r.LogLines), Thousands(r.LinesDropped), r.Traces, verdict)
}

// CountRecords counts the lines of a slog text log whose message is msg.
func CountRecords(log io.Reader, msg string) (int64, error) {
	needle := []byte(" msg=" + msg + " ")
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var n int64
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), needle) {
			n++
		}
	}
	return n, sc.Err()
}
