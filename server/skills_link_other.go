//go:build !unix

package server

import "io/fs"

// hardLinked reports whether the regular file of info has more than one
// name; it cannot tell on this system.
func hardLinked(fs.FileInfo) bool { return false }
