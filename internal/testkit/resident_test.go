package testkit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

func TestExeResident(t *testing.T) {
	const smaps = `00400000-00f48000 r-xp 00000000 08:01 1234 /bin/vigil
Size:              11552 kB
Rss:                1032 kB
00f48000-01cac000 r--p 00b48000 08:01 1234 /bin/vigil
Rss:                 384 kB
01cac000-01d3c000 rw-p 018ac000 08:01 1234 /bin/vigil
Rss:                 512 kB
03000000-03001000 r--s 00000000 08:01 1234 /bin/vigil
Rss:                   4 kB
02000000-02001000 r-xp 00000000 08:01 99 /bin/vigil2
Rss:                   4 kB
180802800000-180803400000 rw-p 00000000 00:00 0
Rss:                9848 kB
`
	assert.Equal(t, uint64(1032+384)<<10, testkit.ExeResident(t, []byte(smaps), "/bin/vigil"),
		"the code and read-only data of the file: not its data, a shared mapping, another file or the heap")
}
