package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// baseline is the vigil of -against: cmd/vigil built from another
// checkout, in the floor's place.
type baseline struct {
	cmd *exec.Cmd
	url string
}

// startAgainst builds cmd/vigil from cfg.against into a directory of its
// own under dir and starts it with args, the flags of the vigil it is
// measured against, its log in against.log (or discarded with vigil's): the same load then compares
// two commits of the service in one run, rounds interleaved, so that the
// machine's drift between runs is not read as a change.
func startAgainst(ctx context.Context, cfg config, dir string, args []string) (baseline, error) {
	binDir := filepath.Join(dir, "against")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		return baseline{}, err
	}
	fmt.Fprintf(os.Stderr, "vigil-bench: building cmd/vigil from %s (-against)\n", cfg.against)
	if err := goBuild(ctx, cfg.goCmd, cfg.against, binDir, "./cmd/vigil"); err != nil {
		return baseline{}, err
	}
	logPath := filepath.Join(dir, "against.log")
	if cfg.vigilLog == os.DevNull {
		logPath = os.DevNull
	}
	cmd, url, err := startVigil(ctx, filepath.Join(binDir, "vigil"), args, logPath)
	if err != nil {
		return baseline{}, err
	}
	return baseline{cmd: cmd, url: url}, nil
}
