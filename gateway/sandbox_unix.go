//go:build unix

package gateway

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByUs reports whether st is a file of the gateway's user.
func ownedByUs(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid()
}
