package streamable

import (
	"io"
	"strconv"
	"time"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/transport"
)

// writeEvent writes one SSE event: an optional id and the data, a JSON
// message, on one line (jsonscan.OneLine).
func writeEvent(w io.Writer, id string, data []byte) error {
	data, _ = jsonscan.OneLine(data)
	b := appendEventHead(make([]byte, 0, len(data)+len(id)+32), id)
	b = append(b, data...)
	_, err := w.Write(append(b, eventTail...))
	return err
}

// appendEventMessage appends m, encoded on one line (jsonscan.OneLine),
// to b, an event's head (appendEventHead): the data of an SSE event,
// eventTail to follow.
func appendEventMessage(b []byte, m transport.Message) ([]byte, error) {
	head := len(b)
	b, err := transport.AppendMessage(b, m)
	if err != nil {
		return b, err
	}
	if data, _ := jsonscan.OneLine(b[head:]); len(data) != len(b)-head {
		b = append(b[:head], data...)
	}
	return b, nil
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
