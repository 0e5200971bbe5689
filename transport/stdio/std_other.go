//go:build !unix

package stdio

import "os"

// Std returns a Conn on the process's standard input and output.
func Std(opts ...Option) *Conn { return New(os.Stdin, os.Stdout, opts...) }
