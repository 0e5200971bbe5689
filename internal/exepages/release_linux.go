package exepages

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Release unmaps the resident pages of the process's executable that are
// still the file's own: in its mappings that are private and not
// writable (see the package doc), the pages /proc/self/pagemap shows
// present and file-backed. It returns the bytes of the pages it advised,
// and an error when it cannot read the mappings or their pages (/proc is
// not mounted, or the kernel has no pagemap) or the kernel refuses the
// advice; a page it has not advised stays resident, as it was.
func Release() (uint64, error) {
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	defer func() { _ = pagemap.Close() }() // read only: nothing to lose
	return ReleaseFrom(pagemap)
}

// ReleaseFrom is Release reading the process's own /proc/self/pagemap,
// opened before: a process that made itself not dumpable (PR_SET_DUMPABLE
// 0, as vigil does) can no longer open it unless it runs as root, and a
// file opened before stays readable.
func ReleaseFrom(pagemap *os.File) (uint64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	return release(readOnly(maps, exe), pagemap, uintptr(os.Getpagesize()))
}

// The bits of a /proc/<pid>/pagemap entry that say what a virtual page
// is (the kernel's Documentation/admin-guide/mm/pagemap.rst); a process
// reads its own without privilege (only the frame numbers are zeroed).
const (
	pagePresent = 1 << 63 // the page is in memory
	pageFile    = 1 << 61 // the page is a file page (or shared anonymous memory)
)

// pagemapChunk is how many pagemap entries release reads at once.
const pagemapChunk = 512

// release advises MADV_DONTNEED on the pages of the mappings ms that
// pagemap (the process's /proc/self/pagemap) shows present and
// file-backed, a run of such pages at a time, and returns the bytes it
// advised. A private mapping's page is the file's until it is written:
// the write copies it into an anonymous page of the process's own, which
// MADV_DONTNEED would drop, the next touch mapping the file's bytes
// again (see the package doc for the loader's such pages). So a written
// page stays, and so does one swapped out (written, not present) or not
// resident (nothing to give back). No one writes the mappings between
// the reading and the advice: they are not writable, and the process
// does not change their protection.
func release(ms []mapping, pagemap io.ReaderAt, pageSize uintptr) (uint64, error) {
	var (
		buf      [pagemapChunk * 8]byte
		advised  uint64
		runStart uintptr // the first page of the run of pages to advise; 0: none
	)
	advise := func(end uintptr) error {
		if runStart == 0 {
			return nil
		}
		start := runStart
		runStart = 0
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("exepages: madvise %#x-%#x: %w", start, end, errno)
		}
		advised += uint64(end - start)
		return nil
	}
	for _, m := range ms {
		for addr := m.start; addr < m.end; {
			n := min((m.end-addr)/pageSize, pagemapChunk)
			if n == 0 {
				break // not a whole page: /proc/self/maps lists none such
			}
			entries := buf[:n*8]
			if _, err := pagemap.ReadAt(entries, int64(addr/pageSize*8)); err != nil {
				return advised, fmt.Errorf("exepages: pagemap at %#x: %w", addr, err)
			}
			for i := range n {
				page := addr + i*pageSize
				e := binary.NativeEndian.Uint64(entries[i*8:])
				switch {
				case e&(pagePresent|pageFile) != pagePresent|pageFile:
					if err := advise(page); err != nil {
						return advised, err
					}
				case runStart == 0:
					runStart = page
				}
			}
			addr += n * pageSize
		}
		if err := advise(m.end); err != nil {
			return advised, err
		}
	}
	return advised, nil
}
