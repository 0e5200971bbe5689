package streamable_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A result is answered byte for byte the same whatever its size: a large
// one (written as it is, around its envelope) with a Content-Length that
// is its answer's length, a small one as before; and a request body of
// any declared length is read whole.
func TestHTTPLargeAnswerIsExact(t *testing.T) {
	e := newHTEnv(t, nil)
	sid := e.initialize(`{}`)
	for _, size := range []int{10, 16<<10 - 200, 16 << 10, 100 << 10, 300 << 10} {
		for _, id := range []string{`7`, `"large \"answer\""`} {
			text := strings.Repeat("abc \"quoted\"\n", size/13+1)[:size]
			quoted, err := json.Marshal(text) // nothing here that it escapes otherwise than the server
			require.NoError(t, err)
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + string(quoted) + `}}}`
			r := e.do(http.MethodPost, body, htSession(sid))
			require.Equal(t, http.StatusOK, r.status, "%.300s", r.body)
			assert.Equal(t, "application/json", r.header.Get("Content-Type"))
			want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + string(quoted) + `}]}}`
			require.Len(t, r.body, len(want), "size %d, id %s", size, id)
			if string(r.body) != want { // not assert.Equal: its diff of 300 KiB answers is unreadable
				t.Errorf("size %d, id %s: the answer differs from %.200s...", size, id, want)
			}
			if size >= 16<<10 {
				assert.Equal(t, strconv.Itoa(len(want)), r.header.Get("Content-Length"), "size %d", size)
			}
		}
	}
}
