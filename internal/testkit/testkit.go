package testkit

import (
	"fmt"
	"testing"
	"time"
)

// Watchdog panics if the test is still running after a minute, so that a
// hung test shows every goroutine's stack instead of timing out silently.
// Use it outside a synctest bubble; inside one, synctest reports a
// deadlock itself.
func Watchdog(t testing.TB) {
	WatchdogAfter(t, time.Minute)
}

// WatchdogAfter is Watchdog for a test whose work (tens of megabytes
// through the race detector on a loaded machine) may take longer than a
// minute without hanging.
func WatchdogAfter(t testing.TB, d time.Duration) {
	timer := time.AfterFunc(d, func() { panic(fmt.Sprintf("%s: hung for %v", t.Name(), d)) })
	t.Cleanup(func() { timer.Stop() })
}
