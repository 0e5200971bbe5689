package asyncwriter_test

import (
	"bytes"
	"fmt"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
)

// Lines are buffered and written by the Writer's goroutine; a line the
// buffer cannot take whole is dropped and counted, never waited for.
// Close writes what is buffered.
func ExampleWriter() {
	var out bytes.Buffer
	w := asyncwriter.New(&out, asyncwriter.WithBufferSize(32))
	_, _ = w.Write([]byte("first line\n"))
	_, _ = w.Write([]byte("second line\n"))
	_, _ = w.Write([]byte("a third line, longer than the buffer\n"))
	if err := w.Close(); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	fmt.Println("dropped:", w.Dropped())
	// Output:
	// first line
	// second line
	// dropped: 1
}
