// Package exepages gives back the resident pages of the process's own
// executable that it is not running.
//
// A Go binary is mapped from its file: its code and read-only data
// (type descriptors, string constants, the function tables the runtime
// reads to walk stacks). Every page the process touches stays mapped, and
// counts in its resident memory (RssFile), until the kernel needs the
// memory; and the kernel maps a fault's neighbors with it, 64 KiB at a
// time, or the whole page-cache folio the page is in, up to 2 MiB, where
// the file's cache holds large folios (Linux 6.18 on ext4). Starting up
// runs every package's initialization, so a process that serves a
// trickle holds most of a 26 MB binary resident, where a few MiB is what
// it runs.
//
// [Release] unmaps those pages: they stay in the page cache, clean and
// free for the kernel to reclaim, and the next touch maps a page back with
// a minor fault. It changes nothing the process sees but its resident
// memory, and the kernel does the same to any of these pages under
// memory pressure. It unmaps only the pages that are still the file's,
// which /proc/self/pagemap tells page by page: a page the loader wrote
// before making it read-only (a position-independent executable's
// relocated pointers, its RELRO segment; text relocations) is the
// process's own copy, and unmapping it would bring back the file's
// unrelocated bytes, on which a PIE died at its first rest. Only a main package should call it, at rest (package
// gcheadroom does, for the shipped binaries).
package exepages
