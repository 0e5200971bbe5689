package exepages

import (
	"fmt"
	"os"
	"syscall"
)

// Release unmaps the resident pages of the process's executable that
// nothing writes: its mappings that are private and not writable (see
// the package doc). It returns the bytes of the mappings it advised, and
// an error when it cannot read them (/proc is not mounted) or the kernel
// refuses the advice.
func Release() (uint64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	var advised uint64
	for _, m := range readOnly(maps, exe) {
		// MADV_DONTNEED on a private file mapping drops the page table
		// entries; unwritten pages come back from the file (the page
		// cache) at their next touch.
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return advised, fmt.Errorf("exepages: madvise %#x-%#x: %w", m.start, m.end, errno)
		}
		advised += uint64(m.end - m.start)
	}
	return advised, nil
}
