package testkit

import "testing"

// External skips t under -short: t needs what, a component from outside
// the module (a program such as redis-server or node, or an npm package),
// which `make test` installs and runs and `make short`, the inner loop,
// leaves out. Call it where a test or helper looks the component up,
// before it does.
func External(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs " + what + ": skipped with -short")
	}
}
