package main

import (
	_ "embed" // the usage text
	"flag"
	"fmt"
)

// usageHead is what vigil -h prints before the flags: what vigil serves,
// and where, and when it needs authorization.
//
//go:embed usage_head.txt
var usageHead string

// usageTail is what vigil -h prints after the flags: the variables no
// flag names, and the signals.
//
//go:embed usage_tail.txt
var usageTail string

// usage prints vigil -h: usageHead, the flags of fs, usageTail.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	_, _ = fmt.Fprint(w, usageHead)
	fs.PrintDefaults()
	_, _ = fmt.Fprint(w, usageTail)
}
