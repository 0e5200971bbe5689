package server_test

import (
	"context"
	"fmt"
	"testing"
)

// exampleT stands for the *testing.T of a test, which an Example has not:
// it is what server/mcptest uses of it. In a test, pass t itself.
type exampleT struct {
	testing.TB // not implemented: calling another method panics
	ctx        context.Context
	cancel     context.CancelFunc
	cleanups   []func()
}

// newExampleT returns a stand-in for t; its done runs the cleanups, as the
// end of a test does.
func newExampleT() *exampleT {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleT{ctx: ctx, cancel: cancel}
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Context() context.Context          { return t.ctx }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// done ends the stand-in test: its cleanups run, last first.
func (t *exampleT) done() {
	t.cancel()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
