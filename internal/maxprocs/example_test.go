package maxprocs_test

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/vigil-mcp/vigil/internal/maxprocs"
)

// A service's main starts the follower once, before serving, and stops it
// at exit; Next shows the rule it applies every Interval.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	defer maxprocs.Start(logger).Stop()

	fmt.Println(maxprocs.Next(4, 4, 0.1)) // a tenth of a core on four Ps: one P
	fmt.Println(maxprocs.Next(1, 4, 0.5)) // half a core on one P: stays
	fmt.Println(maxprocs.Next(1, 4, 0.9)) // most of a core on one P: four again
	// Output:
	// 1
	// 1
	// 4
}
