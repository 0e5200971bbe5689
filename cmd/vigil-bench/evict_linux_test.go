package main

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A file just written is in the page cache; evicted, none of its pages is.
func TestEvictFromCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.WriteFile(path, make([]byte, 1<<20), 0o600))
	assert.Positive(t, cachedPages(t, path), "a file just written is not cached: the test shows nothing")
	require.NoError(t, evictFromCache(path))
	assert.Zero(t, cachedPages(t, path), "pages still cached after the eviction")
	assert.Error(t, evictFromCache(filepath.Join(t.TempDir(), "missing")))
}

// cachedPages returns how many of path's pages the page cache holds
// (mincore of a mapping of it, which reads no page in).
func cachedPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	require.NoError(t, err)
	m, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { require.NoError(t, unix.Munmap(m)) }()
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
