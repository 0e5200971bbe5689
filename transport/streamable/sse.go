package streamable

import (
	"io"
	"strconv"
	"time"
)

// writeEvent writes one SSE event: an optional id and the data, which must
// not contain a newline (encoded JSON-RPC never does).
func writeEvent(w io.Writer, id string, data []byte) error {
	b := appendEventHead(make([]byte, 0, len(data)+len(id)+32), id)
	b = append(b, data...)
	_, err := w.Write(append(b, eventTail...))
	return err
}

// appendEventHead appends an SSE event's fields before its data (an
// optional id, the event type) and the data field's name; the data and
// eventTail follow.
func appendEventHead(b []byte, id string) []byte {
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	return append(b, "event: message\ndata: "...)
}

// eventTail ends an SSE event.
const eventTail = "\n\n"

// writePriming writes a priming event: an id, the retry field (when
// retry > 0) and empty data.
func writePriming(w io.Writer, id string, retry time.Duration) error {
	b := make([]byte, 0, len(id)+32)
	b = append(b, "id: "...)
	b = append(b, id...)
	b = append(b, '\n')
	if retry > 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, retry.Milliseconds(), 10)
		b = append(b, '\n')
	}
	b = append(b, "data: \n\n"...)
	_, err := w.Write(b)
	return err
}
