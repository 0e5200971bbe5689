package wholebody

import (
	"bytes"
	"io"
)

// Body is a request body already read whole: set it as the request's Body
// (r.Body = wholebody.New(data, r.Body)) and the Streamable HTTP endpoint
// takes data as it is ([Body.Unread]). Read from elsewhere, it is an
// ordinary body that yields data.
//
// The reader of [Body.Unread] owns data from then on: the handler that made
// the Body must not use data again.
type Body struct {
	r     bytes.Reader
	data  []byte
	close io.Closer
}

// New returns a body holding data, whose Close closes orig (the body data
// was read from; nil for none).
func New(data []byte, orig io.Closer) *Body {
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

// Unread returns the body's data, and whether none of it has been read
// yet: only then is it the whole body.
func (b *Body) Unread() ([]byte, bool) {
	return b.data, b.r.Len() == len(b.data)
}
