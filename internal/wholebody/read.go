package wholebody

import (
	"errors"
	"io"
)

// firstChunk is the buffer ReadDeclared starts with when the declared
// length is longer: what it allocates for a length the client never sends.
const firstChunk = 64 << 10

// ReadDeclared reads a body that declared its length, n bytes (as a
// request's Content-Length, already checked against the caller's limit),
// and returns exactly those bytes: in one buffer of that size when n is at
// most 64 KiB; otherwise in one of 64 KiB that grows fourfold as the bytes
// arrive, and to n at once when a 32nd of n has arrived. A body of up to
// 2 MiB costs its length and 64 KiB, not the sum of a doubling buffer's
// steps, and a client that declares a length it does not send holds at
// most 32 times what it sent. A body that ends short is io.ErrUnexpectedEOF; what
// comes after n bytes is not read.
func ReadDeclared(r io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return nil, io.ErrUnexpectedEOF
	}
	buf := make([]byte, min(n, firstChunk))
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if int64(got) == n {
			return buf, nil
		}
		next := n
		if n > 32*int64(got) {
			next = 4 * int64(got)
		}
		grown := make([]byte, next)
		copy(grown, buf)
		buf = grown
	}
}
