package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
)

// WrapIOError wraps err, a failure of operation op ("read", "write"), in its
// class. closedLocally is the transport's own record of whether Close has run:
// it decides first, because the same OS error (a closed pipe, for one) can
// come from either side. Otherwise errors that say this process closed the
// stream (os.ErrClosed, net.ErrClosed) are [ErrClosed], and everything else,
// EOF, EPIPE and ECONNRESET included, means the stream is unusable through no
// act of ours and is [ErrPeerGone]. A nil err stays nil.
func WrapIOError(op string, closedLocally bool, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrPeerGone) {
		return err
	}
	class := ErrPeerGone
	if closedLocally || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
		class = ErrClosed
	}
	return fmt.Errorf("%s: %w: %w", op, class, err)
}
