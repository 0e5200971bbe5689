package server

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// defaultPageSize is how many items one page of a list result holds unless
// WithPageSize says otherwise.
const defaultPageSize = 100

const cursorPrefix = "v1:"

// paginate returns the page of items (key(i) is the key of items[i]; keys
// sorted, unique) that follows cursor, and the cursor of the next page (""
// on the last page).
// Cursors are opaque to clients but stable: a cursor names the last key of
// its page, so adding or removing items never repeats or skips an item that
// stayed. A cursor that does not decode is protocol.CodeInvalidParams.
// The page is never nil, so that an empty one encodes as the array every
// list result's schema requires, not null.
func paginate[T any](items []T, key func(i int) string, cursor string, size int) ([]T, string, error) {
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
		start = sort.Search(len(items), func(i int) bool { return key(i) > last })
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
	return page, base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key(end-1))), nil
}

// listParams are the params of every paginated list request.
type listParams struct {
	Cursor string `json:"cursor"`
}

// listPage selects the page of a list request (prompts/list,
// resources/list, resources/templates/list): the items of *listed, read
// under mu (replaced, never modified, on change), from the request's
// cursor on, and the cursor of the next page. keep, when not nil, leaves
// out the items it returns false for, before paginating, so that pages
// stay full and a cursor stays valid.
func listPage[T any](s *Server, req *Request, mu *sync.RWMutex, listed *ordered[T], keep func(T) bool) ([]T, string, error) {
	p, err := decodeListParams(req)
	if err != nil {
		return nil, "", err
	}
	mu.RLock()
	l := *listed
	mu.RUnlock()
	if keep != nil {
		var kept ordered[T]
		for i, item := range l.items {
			if keep(item) {
				kept.items, kept.keys = append(kept.items, item), append(kept.keys, l.keys[i])
			}
		}
		l = kept
	}
	return paginate(l.items, func(i int) string { return l.keys[i] }, p.Cursor, s.cfg.pageSize)
}

// ordered is a list as list requests show it: its items in the order
// they were first registered, with the key of each in the pages' cursors
// (orderKey), so that keys sort as the items are listed.
type ordered[T any] struct {
	items []T
	keys  []string
}

// add appends item, of the registration order n.
func (l *ordered[T]) add(item T, n uint64) {
	l.items = append(l.items, item)
	l.keys = append(l.keys, orderKey(n))
}

// orderKey is the key in a list's pages of the item first registered
// n-th: n in fixed-width hexadecimal.
func orderKey(n uint64) string { return fmt.Sprintf("%016x", n) }
