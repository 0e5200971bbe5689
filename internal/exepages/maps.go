package exepages

import (
	"bufio"
	"bytes"
	"strconv"
)

// mapping is the addresses of one line of /proc/self/maps.
type mapping struct{ start, end uintptr }

// readOnly returns the mappings of the file at path that maps (as
// /proc/<pid>/maps lists them) has private and without write permission:
// the code and read-only data of an executable, never its data, which the
// process writes.
func readOnly(maps []byte, path string) []mapping {
	var out []mapping
	s := bufio.NewScanner(bytes.NewReader(maps))
	for s.Scan() {
		// address perms offset dev inode pathname
		f := bytes.Fields(s.Bytes())
		if len(f) != 6 || string(f[5]) != path {
			continue
		}
		if perms := f[1]; len(perms) != 4 || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, errStart := strconv.ParseUint(string(lo), 16, 64)
		end, errEnd := strconv.ParseUint(string(hi), 16, 64)
		if errStart != nil || errEnd != nil || end <= start {
			continue
		}
		out = append(out, mapping{uintptr(start), uintptr(end)})
	}
	return out
}
