package testkit

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// ExeResident returns the bytes of the executable at path exe that smaps
// (the text of /proc/<pid>/smaps) shows resident in its private mappings
// without write permission: its code and read-only data, the pages
// package exepages releases.
func ExeResident(t testing.TB, smaps []byte, exe string) uint64 {
	t.Helper()
	var sum uint64
	ours := false
	for line := range bytes.Lines(smaps) {
		f := strings.Fields(string(line))
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			// address perms offset dev inode [pathname]
			ours = len(f) == 6 && f[5] == exe && f[1][1] == '-' && f[1][3] == 'p'
		case ours && len(f) == 3 && f[0] == "Rss:":
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			sum += kb << 10
		}
	}
	return sum
}
