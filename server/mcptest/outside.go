package mcptest

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// outsideTest is the t of a client made outside a test (t nil: an
// Example, which has no *testing.T): a failure panics, and what a test's
// end would run (closing the pipe, waiting for Serve) runs at
// [Client.Close].
type outsideTest struct {
	testing.TB // nil: no other method is called
	ctx        context.Context
	cancel     context.CancelFunc
	mu         sync.Mutex
	cleanups   []func()
	once       sync.Once
}

func newOutsideTest() *outsideTest {
	ctx, cancel := context.WithCancel(context.Background())
	return &outsideTest{ctx: ctx, cancel: cancel}
}

func (*outsideTest) Helper()                      {}
func (o *outsideTest) Context() context.Context   { return o.ctx }
func (*outsideTest) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (*outsideTest) Errorf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

func (o *outsideTest) Cleanup(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cleanups = append(o.cleanups, f)
}

// end runs the cleanups, last first, once.
func (o *outsideTest) end() {
	o.once.Do(func() {
		o.cancel()
		o.mu.Lock()
		cleanups := o.cleanups
		o.mu.Unlock()
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
}
