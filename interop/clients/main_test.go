package clients

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// repoRoot is the repository's root, whose commands the suite builds.
const repoRoot = "../.."

// childEnv names the environment variable that turns the test binary into
// one of the child processes the suite spawns (a client to kill, a
// page-size-2 stdio server): see runChild.
const childEnv = "VIGIL_CLIENTS_CHILD"

// vigilBin and everythingBin are the shipped servers, built once from the
// repository's root: cmd/vigil (echo, sleep, /metrics, /debug/vigil) and
// cmd/vigil-everything (every feature).
var vigilBin, everythingBin string

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	dir, err := os.MkdirTemp("", "vigil-clients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	vigilBin = filepath.Join(dir, "vigil")
	everythingBin = filepath.Join(dir, "vigil-everything")
	for bin, pkg := range map[string]string{vigilBin: "./cmd/vigil", everythingBin: "./cmd/vigil-everything"} {
		build := exec.Command("go", "build", "-ldflags", "-X main.version=dev", "-o", bin, pkg)
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}
