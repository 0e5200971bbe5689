//go:build !linux

package overload

import (
	"net"
	"time"
)

// socketIdle cannot tell how long ago a socket received data outside
// Linux: the Limiter follows the scheduling latency there.
func socketIdle(net.Conn) (time.Duration, bool) { return 0, false }
