package streamable

import (
	"bytes"
	"io"
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
