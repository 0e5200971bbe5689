//go:build unix

package server

import (
	"io/fs"
	"syscall"
)

// hardLinked reports whether the regular file of info has more than one
// name (a hard link), as a file of os.DirFS tells.
func hardLinked(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Nlink) > 1
}
