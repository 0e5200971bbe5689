package streamable

import (
	"bytes"
	"io"
	"strconv"
	"time"
)

// writeEvent writes one SSE event: an optional id and the data, which must
// not contain a newline (encoded JSON-RPC never does).
func writeEvent(w io.Writer, id string, data []byte) error {
	var b bytes.Buffer
	b.Grow(len(data) + len(id) + 32)
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(id)
		b.WriteByte('\n')
	}
	b.WriteString("event: message\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, err := w.Write(b.Bytes())
	return err
}

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
