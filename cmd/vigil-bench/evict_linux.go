package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// evictFromCache writes each file out and drops its pages from the page
// cache, so that the process started from it reads its executable from
// disk, a page fault and its readahead at a time, as one started after a
// deployment does. A binary the linker has just written is cached in the
// folios of those writes, which on Linux 6.18 (ext4) reach 2 MiB, and a
// fault maps its whole folio: at rest a few calls then map back most of
// what exepages.Release gave, 13-21 MiB of vigil's 36 MiB against 4 MiB
// read from disk (docs/perf/ROUNDS.md, seventh stop), and each gateway's
// figure depended on how its binary came into the cache.
func evictFromCache(paths ...string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("evicting %s from the page cache: %w", p, err)
		}
		err = f.Sync()
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		_ = f.Close() // read only: nothing to lose
		if err != nil {
			return fmt.Errorf("evicting %s from the page cache: %w", p, err)
		}
	}
	return nil
}
