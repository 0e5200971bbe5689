package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// A peer that stops reading holds no writer past its ctx: a Write blocked
// on a full pipe returns when its ctx ends, the rest of its line still
// goes out before anything else (the stream stays whole lines), and a
// later writer waits for it within its own ctx only.
func TestWriteBlockedOnAPeerThatStopsReadingEndsWithItsContext(t *testing.T) {
	t.Parallel()
	pr, pw := pipe(t)
	c := stdio.New(strings.NewReader(""), pw)
	big := &transport.Request{Method: "big", Params: json.RawMessage(`{"s":"` + strings.Repeat("x", 1<<20) + `"}`)}

	// Nobody reads pr: 1 MiB cannot fit a pipe's buffer, which takes the
	// first 64 KiB of it at once. The write blocks until its deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Write(ctx, big), context.DeadlineExceeded)

	second := errors.New("the second caller gave up")
	ctx2, cancel2 := context.WithTimeoutCause(t.Context(), 100*time.Millisecond, second)
	defer cancel2()
	require.ErrorIs(t, c.Write(ctx2, req(2, "after")), second, "a later writer waits for the rest of the line within its ctx")

	// Reading the pipe now: the big line arrives whole (or not at all,
	// when nothing of it was written), and no half line.
	lines := make(chan string, 1)
	go func() {
		in := bufio.NewScanner(pr)
		in.Buffer(nil, 2<<20)
		var got []string
		for in.Scan() {
			got = append(got, in.Text())
		}
		lines <- strings.Join(got, "\n")
	}()
	require.NoError(t, c.Write(t.Context(), req(3, "last")), "once the peer reads, writes go on")
	require.NoError(t, c.Close())
	got := <-lines
	for l := range strings.SplitSeq(got, "\n") {
		assert.True(t, json.Valid([]byte(l)), "each line is a whole message: %.80q", l)
	}
	assert.True(t, strings.HasSuffix(got, `"method":"last"}`), "%.80q", got[max(0, len(got)-80):])
}
