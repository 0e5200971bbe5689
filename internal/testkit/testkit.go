package testkit

import (
	"testing"
	"time"
)

// Watchdog panics if the test is still running after a minute, so that a
// hung test shows every goroutine's stack instead of timing out silently.
// Use it outside a synctest bubble; inside one, synctest reports a
// deadlock itself.
func Watchdog(t testing.TB) {
	timer := time.AfterFunc(60*time.Second, func() { panic(t.Name() + ": hung for 60s") })
	t.Cleanup(func() { timer.Stop() })
}
