package exepages

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleaseKeepsWrittenPages: a private mapping of a file, written in
// one page and then made read-only, as the loader leaves a PIE's RELRO
// segment, keeps the written page and its bytes through release, which
// gives back the file's own pages around it. Advising the written page
// would bring the file's bytes back in its place.
func TestReleaseKeepsWrittenPages(t *testing.T) {
	ps := os.Getpagesize()
	const pages = 6
	const written = 2 // the page the test writes, as the loader relocates
	content := make([]byte, pages*ps)
	for i := range pages {
		copy(content[i*ps:(i+1)*ps], bytes.Repeat([]byte{byte('a' + i)}, ps))
	}
	path := filepath.Join(t.TempDir(), "exe")
	require.NoError(t, os.WriteFile(path, content, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	mem, err := syscall.Mmap(int(f.Fd()), 0, pages*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	var sum int
	for i := range pages {
		sum += int(mem[i*ps])
	}
	require.Equal(t, pages*int('a')+pages*(pages-1)/2, sum)
	mem[written*ps] = 'R' // copy-on-write: the page is the process's now
	require.NoError(t, syscall.Mprotect(mem, syscall.PROT_READ))
	// The last page is not resident: nothing to give back.
	require.NoError(t, syscall.Madvise(mem[(pages-1)*ps:], syscall.MADV_DONTNEED))
	start := uintptr(addrOf(mem))
	pagemap, err := os.Open("/proc/self/pagemap")
	require.NoError(t, err)
	defer func() { _ = pagemap.Close() }()
	require.Equal(t, []uint64{pagePresent | pageFile, pagePresent | pageFile, pagePresent, pagePresent | pageFile, pagePresent | pageFile, 0},
		flags(t, pagemap, start, pages), "the pages before the release: file's, written, not resident")

	advised, err := release([]mapping{{start, start + uintptr(pages*ps)}}, pagemap, uintptr(ps))
	require.NoError(t, err)

	assert.Equal(t, []uint64{0, 0, pagePresent, 0, 0, 0}, flags(t, pagemap, start, pages),
		"the file's resident pages given back, the written one kept")
	assert.Equal(t, uint64(4*ps), advised, "advised other than the file's 4 resident pages")
	assert.Equal(t, byte('R'), mem[written*ps], "the written page was advised: its bytes are the file's again")
	assert.Equal(t, bytes.Repeat([]byte{byte('a' + written)}, ps-1), mem[written*ps+1:(written+1)*ps])
	for _, i := range []int{0, 1, 3, 4, 5} {
		assert.Equal(t, byte('a'+i), mem[i*ps], "page %d, mapped again from the file", i)
	}
}

// TestReleaseAdvisesRunsAcrossChunks: a mapping longer than what release
// reads of pagemap at once is released whole.
func TestReleaseAdvisesRunsAcrossChunks(t *testing.T) {
	ps := os.Getpagesize()
	pages := pagemapChunk*2 + 3
	path := filepath.Join(t.TempDir(), "exe")
	require.NoError(t, os.WriteFile(path, make([]byte, pages*ps), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	mem, err := syscall.Mmap(int(f.Fd()), 0, pages*ps, syscall.PROT_READ, syscall.MAP_PRIVATE)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	sum := 0
	for i := range pages {
		sum += int(mem[i*ps])
	}
	require.Zero(t, sum)
	start := uintptr(addrOf(mem))
	pagemap, err := os.Open("/proc/self/pagemap")
	require.NoError(t, err)
	defer func() { _ = pagemap.Close() }()
	advised, err := release([]mapping{{start, start + uintptr(pages*ps)}}, pagemap, uintptr(ps))
	require.NoError(t, err)
	assert.Equal(t, uint64(pages*ps), advised)
	for i, fl := range flags(t, pagemap, start, pages) {
		require.Zero(t, fl, "page %d still resident", i)
	}
}

// flags returns the present and file bits of the pagemap entries of the
// pages pages from start.
func flags(t *testing.T, pagemap *os.File, start uintptr, pages int) []uint64 {
	t.Helper()
	ps := uintptr(os.Getpagesize())
	b := make([]byte, pages*8)
	_, err := pagemap.ReadAt(b, int64(start/ps*8))
	require.NoError(t, err)
	out := make([]uint64, pages)
	for i := range out {
		out[i] = binary.NativeEndian.Uint64(b[i*8:]) & (pagePresent | pageFile)
	}
	return out
}
