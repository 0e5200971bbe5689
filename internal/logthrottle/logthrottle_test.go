package logthrottle

import (
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestThrottle: a burst of lines at once, then one a period, each told how
// many were left out before it.
func TestThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := New(10*time.Second, 3)
		var written []int64
		for range 100 { // 100 lines at once: 3 written
			if ok, skipped := th.Allow(); ok {
				written = append(written, skipped)
			}
		}
		if len(written) != 3 || written[0] != 0 || written[2] != 0 {
			t.Fatalf("at once: %v, want 3 lines, none told of a skip", written)
		}
		time.Sleep(10 * time.Second)
		ok, skipped := th.Allow()
		if !ok || skipped != 97 {
			t.Fatalf("after a period: %v, %d skipped; want true, 97", ok, skipped)
		}
		if ok, _ := th.Allow(); ok {
			t.Fatal("a second line within the period was let through")
		}
	})
}
