package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The memory budget FuzzPOSTMemory holds the server to: the live heap
// above its baseline stays within memPerSession for each session the
// server holds, plus memSlack for the process (the fuzzer's own state,
// the runtime's caches, and the last input, which a goroutine may still
// hold when the heap is measured). The attacks send megabytes per input;
// a session with its bounded state needs several times less than
// memPerSession.
const (
	memPerSession = 256 << 10
	memSlack      = 2*memMaxAttack + 1<<20
	memMaxAttack  = 3 << 20
)

// memAttack builds the body of one hostile POST: kind chooses the attack,
// size its length (at most memMaxAttack), fill the bytes repeated.
func memAttack(kind uint8, size uint32, fill string) (body []byte, initialize bool) {
	n := int(size % (memMaxAttack + 1))
	// A fill JSON would escape makes a body of up to six times n: plain
	// text keeps every body near n, under the body limit.
	if fill = fill[:min(len(fill), 8)]; !utf8.ValidString(fill) || strings.ContainsAny(fill, "\"\\<>&\u2028\u2029") ||
		strings.IndexFunc(fill, func(r rune) bool { return r < 0x20 }) >= 0 || fill == "" {
		fill = "x"
	}
	long := strings.Repeat(fill, n/len(fill)+1)[:n]
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	initBody := func(caps, info string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + htVersion +
			`","capabilities":` + caps + `,"clientInfo":` + info + `}}`)
	}
	switch kind % 8 {
	case 0: // one large experimental capability
		return initBody(`{"experimental":{"x":`+str(long)+`}}`, `{"name":"c","version":"1"}`), true
	case 1: // many experimental capabilities, under the params cap
		var b strings.Builder
		b.WriteString(`{"experimental":{`)
		for i := range min(n/64, 900) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(str(long[:min(len(long), 20)] + string(rune('a'+i%26)) + strings.Repeat("k", i/26)))
			b.WriteString(`:` + str(strings.Repeat("v", 40)))
		}
		b.WriteString(`},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
		return initBody(b.String(), `{"name":"c","version":"1"}`), true
	case 2: // long clientInfo strings, under the params cap
		s := str(long[:min(len(long), 20<<10)])
		return initBody(`{}`, `{"name":`+s+`,"title":`+s+`,"version":`+s+`}`), true
	case 3: // a long method
		return []byte(`{"jsonrpc":"2.0","id":1,"method":` + str("m"+long) + `}`), false
	case 4: // a long string id
		return []byte(`{"jsonrpc":"2.0","id":` + str("i"+long) + `,"method":"ping"}`), false
	case 5: // a long tool name
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + str("t"+long) + `}}`), false
	case 6: // a long cancel reason and progress token
		return []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":` + str(long) + `}}`), false
	default: // a long progress token on a real call
		return []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":` + str(long) + `}}}`), false
	}
}

// liveHeap returns the live heap after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// memPost posts one attack to h (on the live session sid unless it is an
// initialize) and returns the status; nothing of it stays reachable.
//
//go:noinline
func memPost(ctx context.Context, h http.Handler, sid string, kind uint8, size uint32, fill string) int {
	body, initialize := memAttack(kind, size, fill)
	if initialize {
		sid = ""
	}
	return htFuzzPost(ctx, h, body, "application/json", htVersion, sid, "").Code
}

// FuzzPOSTMemory replays initialize and name bombs of random shapes and
// sizes against one Endpoint, on new sessions and on a live one, and
// asserts after each that the heap the server kept stays within the
// budget above (memPerSession per session it holds), which keeping any
// attack's bytes for the session's life would break at once. What the
// server keeps is the sum of each input's growth of the live heap, from
// just before it to just after it, less what shrank between inputs (a
// goroutine that let go of an input late): the fuzzer's own buffers grow
// between inputs, and are not counted.
func FuzzPOSTMemory(f *testing.F) {
	srv := htServer(f)
	h := streamable.New(srv, streamable.WithMaxSessions(64), streamable.WithMaxBodyBytes(4<<20))
	f.Cleanup(func() {
		_ = h.Close()
		_ = srv.Close()
	})
	rec := htFuzzPost(f.Context(), h, []byte(htInitBody(`{}`)), "application/json", "", "", "")
	require.Equal(f, http.StatusOK, rec.Code, "%s", rec.Body)
	sid := rec.Header().Get("Mcp-Session-Id")
	rec = htFuzzPost(f.Context(), h, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "application/json", htVersion, sid, "")
	require.Equal(f, http.StatusAccepted, rec.Code)

	for _, fill := range []string{"a", "bc", "def"} { // initialize bombs in a row
		f.Add(uint8(0), uint32(memMaxAttack), fill)
	}
	for kind := range uint8(8) {
		f.Add(kind, uint32(memMaxAttack), "é")
		f.Add(kind, uint32(60<<10), "ab")
	}
	var kept, lastAfter int64
	f.Fuzz(func(t *testing.T, kind uint8, size uint32, fill string) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		before := liveHeap()
		if lastAfter > 0 {
			kept += min(0, before-lastAfter) // what the server let go of late
		}
		if code := memPost(ctx, h, sid, kind, size, fill); !htFuzzStatuses[code] {
			t.Fatalf("status %d for attack %d", code, kind%8)
		}
		lastAfter = liveHeap()
		kept = max(0, kept+lastAfter-before)
		sessions := int64(len(srv.Sessions()))
		if budget := sessions*memPerSession + memSlack; kept > budget {
			t.Fatalf("the server kept %d bytes, over the budget of %d for %d sessions (attack %d, %d bytes)",
				kept, budget, sessions, kind%8, size%(memMaxAttack+1))
		}
		checkKept(t, srv)
	})
}

// checkKept checks what each session keeps of its client against the
// documented bounds.
func checkKept(t *testing.T, srv *server.Server) {
	t.Helper()
	for _, ss := range srv.Sessions() {
		info := ss.ClientInfo()
		if len(info.Name) > 256 || len(info.Title) > 256 || len(info.Version) > 256 {
			t.Fatalf("clientInfo kept over 256 bytes: %d, %d, %d", len(info.Name), len(info.Title), len(info.Version))
		}
		caps := ss.ClientCapabilities()
		if len(caps.Experimental) > 16 || len(caps.Extensions) > 16 {
			t.Fatalf("capabilities kept over 16 keys: %d, %d", len(caps.Experimental), len(caps.Extensions))
		}
	}
}

// A long MCP-Protocol-Version header is refused without being echoed
// whole.
func TestLongVersionHeaderNotEchoed(t *testing.T) {
	srv := htServer(t)
	h := streamable.New(srv)
	t.Cleanup(func() {
		_ = h.Close()
		_ = srv.Close()
	})
	rec := htFuzzPost(t.Context(), h, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), "application/json", strings.Repeat("v", 100<<10), "", "")
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Contains(t, rec.Body.String(), "unsupported MCP-Protocol-Version")
	require.Less(t, rec.Body.Len(), 512)
}
