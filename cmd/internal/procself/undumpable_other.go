//go:build !linux

package procself

// undumpable does nothing off Linux.
func undumpable() {}
