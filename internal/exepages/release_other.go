//go:build !linux

package exepages

import "errors"

// Release does nothing outside Linux: it returns an error that says so.
func Release() (uint64, error) {
	return 0, errors.New("exepages: not supported outside Linux")
}
