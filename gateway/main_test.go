package gateway_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if everything.path != "" {
			_ = os.RemoveAll(filepath.Dir(everything.path))
		}
		os.Exit(code)
	}))
}
