//go:build !linux

package main

// undumpable does nothing off Linux.
func undumpable() {}
