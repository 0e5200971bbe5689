package exepages

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadOnly(t *testing.T) {
	const maps = `00400000-00f48000 r-xp 00000000 08:01 1234 /usr/local/bin/vigil
00f48000-01cac000 r--p 00b48000 08:01 1234 /usr/local/bin/vigil
01cac000-01d3c000 rw-p 018ac000 08:01 1234 /usr/local/bin/vigil
01d3c000-01d80000 rw-p 00000000 00:00 0
02000000-02001000 r-xp 00000000 08:01 99 /usr/local/bin/vigil2
03000000-03001000 r--s 00000000 08:01 1234 /usr/local/bin/vigil
04000000-04001000 r--p 00000000 08:01 1234 /usr/local/bin/vigil (deleted)
05000000-04001000 r--p 00000000 08:01 1234 /usr/local/bin/vigil
zz-05001000 r--p 00000000 08:01 1234 /usr/local/bin/vigil
180802800000-180803400000 rw-p 00000000 00:00 0
7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]
`
	got := readOnly([]byte(maps), "/usr/local/bin/vigil")
	assert.Equal(t, []mapping{{0x400000, 0xf48000}, {0xf48000, 0x1cac000}}, got,
		"the code and read-only data of the file, nothing writable, shared, of another file, deleted or malformed")
}
