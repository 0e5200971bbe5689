package main

import "os"

// pagesEvery is set by the tests alone, with -ldflags "-X
// main.pagesEvery=N": the GC tuner then releases the executable's pages
// every N rest intervals (half seconds) whatever the load, instead of once
// after each 30 s of rest, so that a test sees many releases, at idle and
// under load, in seconds (exepages_e2e_linux_test.go). "" in every build
// that ships.
var pagesEvery string

// ownPagemap is /proc/self/pagemap, opened before vigil made itself not
// dumpable (procself.Protect); nil: each release opens it.
var ownPagemap *os.File
