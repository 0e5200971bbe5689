package gcheadroom_test

import (
	"fmt"

	"github.com/vigil-mcp/vigil/internal/gcheadroom"
)

// A service's main starts the tuner once, before serving, and stops it at
// exit; PercentFor shows the rule it applies after every collection.
func Example() {
	tuner := gcheadroom.Start(32 << 20)
	defer tuner.Stop()

	fmt.Println(gcheadroom.PercentFor(4<<20, 32<<20, 100))   // 4 MiB live: goal 32 MiB
	fmt.Println(gcheadroom.PercentFor(512<<20, 32<<20, 100)) // 512 MiB live: GOGC's own 100
	// Output:
	// 700
	// 100
}
