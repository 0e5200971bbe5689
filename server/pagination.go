package server

import (
	"encoding/base64"
	"sort"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// defaultPageSize is how many items one page of a list result holds unless
// WithPageSize says otherwise.
const defaultPageSize = 100

const cursorPrefix = "v1:"

// paginate returns the page of items (sorted by key, keys unique) that
// follows cursor, and the cursor of the next page ("" on the last page).
// Cursors are opaque to clients but stable: a cursor names the last key of
// its page, so adding or removing items never repeats or skips an item that
// stayed. A cursor that does not decode is protocol.CodeInvalidParams.
// The page is never nil, so that an empty one encodes as the array every
// list result's schema requires, not null.
func paginate[T any](items []T, key func(T) string, cursor string, size int) ([]T, string, error) {
	start := 0
	if len(cursor) > maxCursor {
		return nil, "", Errorf(protocol.CodeInvalidParams, "invalid cursor: over %d bytes", maxCursor)
	}
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		last, ok := strings.CutPrefix(string(raw), cursorPrefix)
		if err != nil || !ok {
			return nil, "", Errorf(protocol.CodeInvalidParams, "invalid cursor")
		}
		start = sort.Search(len(items), func(i int) bool { return key(items[i]) > last })
	}
	if size <= 0 {
		size = defaultPageSize
	}
	end := min(start+size, len(items))
	page := items[start:end:end]
	if page == nil {
		page = []T{} // no allocation: a zero-length slice shares one address
	}
	if end == len(items) {
		return page, "", nil
	}
	return page, base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key(items[end-1]))), nil
}

// listParams are the params of every paginated list request.
type listParams struct {
	Cursor string `json:"cursor"`
}

// listPage selects the page of a list request (tools/list, prompts/list,
// resources/list, resources/templates/list): the items of *listed, read
// under mu (the slice is replaced, never modified, on change), from the
// request's cursor on, and the cursor of the next page.
func listPage[T any](s *Server, req *Request, mu *sync.RWMutex, listed *[]T, key func(T) string) ([]T, string, error) {
	p, err := decodeListParams(req)
	if err != nil {
		return nil, "", err
	}
	mu.RLock()
	items := *listed
	mu.RUnlock()
	return paginate(items, key, p.Cursor, s.cfg.pageSize)
}
