package testkit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Binary is a main package built at most once per test binary's run, for
// the tests that run it as a process.
type Binary struct {
	pkg  string
	once sync.Once
	path string
	err  error
}

// NewBinary returns the Binary of the main package pkg (an import path).
func NewBinary(pkg string) *Binary { return &Binary{pkg: pkg} }

// Path builds the binary on its first call (in a directory of its own,
// which Remove removes) and returns its path; it fails t when the build
// fails, on that call and every later one.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "testkit-binary") //nolint:usetesting // outlives the test that builds it: removed by Remove, from TestMain
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(b.pkg))
		// -X main.version=dev: a command answers with the version the tests
		// expect, whatever the build would stamp.
		if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=dev", "-o", b.path, b.pkg).CombinedOutput(); err != nil {
			b.err = errors.New(string(out))
		}
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v", b.pkg, b.err)
	}
	return b.path
}

// Remove removes what Path built, if it built anything.
func (b *Binary) Remove() {
	if b.path != "" {
		_ = os.RemoveAll(filepath.Dir(b.path))
	}
}
