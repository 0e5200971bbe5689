package transport

// Wrapper is a Conn that wraps another, such as one that counts its
// traffic; Unwrap returns the wrapped Conn. A Conn that wraps another
// implements it, so that [As] finds the capabilities of the Conn beneath.
type Wrapper interface {
	Unwrap() Conn
}

// As returns c, or the first Conn beneath c through [Wrapper]s, that
// implements T (one of this package's optional capabilities, such as
// [Shared] or [Single]); false when none does. It is to a Conn what
// errors.As is to an error.
func As[T any](c Conn) (T, bool) {
	for c != nil {
		if t, ok := c.(T); ok {
			return t, true
		}
		w, ok := c.(Wrapper)
		if !ok {
			break
		}
		c = w.Unwrap()
	}
	var zero T
	return zero, false
}
