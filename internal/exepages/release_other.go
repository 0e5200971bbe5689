//go:build !linux

package exepages

import (
	"errors"
	"os"
)

// Release does nothing outside Linux: it returns an error that says so.
func Release() (uint64, error) {
	return 0, errors.New("exepages: not supported outside Linux")
}

// ReleaseFrom does nothing outside Linux: it returns an error that says so.
func ReleaseFrom(*os.File) (uint64, error) { return Release() }
