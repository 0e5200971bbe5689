package streamable

import (
	"bytes"
	"io"
)

// Body is a request body that a handler in front of an [Endpoint] has
// already read whole, such as an authorization guard that had to look at
// the tools a request calls: set it as the request's Body
// (r.Body = streamable.NewBody(data, r.Body)) and the Endpoint takes data
// as it is, instead of reading and copying it again. Read from elsewhere,
// it is an ordinary body that yields data.
//
// The Endpoint owns data from then on: the handler that made the Body must
// not use data again.
type Body struct {
	r     bytes.Reader
	data  []byte
	close io.Closer
}

// NewBody returns a body holding data, whose Close closes orig (the body
// data was read from; nil for none).
func NewBody(data []byte, orig io.Closer) *Body {
	b := &Body{data: data, close: orig}
	b.r.Reset(data)
	return b
}

// Read reads the body's data.
func (b *Body) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close closes the body the data was read from.
func (b *Body) Close() error {
	if b.close == nil {
		return nil
	}
	return b.close.Close()
}

// unread returns the body's data when none of it has been read yet.
func (b *Body) unread() ([]byte, bool) {
	return b.data, b.r.Len() == len(b.data)
}
