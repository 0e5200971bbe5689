package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// maxPages bounds the pages one List reads, against an upstream that
// pages forever.
const maxPages = 1024

// List calls a paginated list method (tools/list, resources/list,
// resources/templates/list, prompts/list) page after page, following
// nextCursor, and returns the items of the result member field
// ("tools", "resources", "resourceTemplates", "prompts") of every page.
// It fails when the upstream returns more than maxItems items, or more
// than 1,024 pages, or repeats a cursor.
func (s *Session) List(ctx context.Context, method, field string, maxItems int) ([]json.RawMessage, error) {
	return s.ListWithin(ctx, method, field, maxItems, nil)
}

// ErrListTooLarge is wrapped by the error of a listing whose items hold
// more bytes than its budget (see [Session.ListWithin]).
var ErrListTooLarge = errors.New("upstream: the listed items are over their bound in bytes")

// ListWithin is [Session.List], whose items, as JSON, may hold at most
// *budget bytes (none when budget is nil): each item's bytes are taken
// from it, and the listing fails with [ErrListTooLarge], keeping none of
// them, once they would take more. Each page is bounded by the session's
// bound on a message.
func (s *Session) ListWithin(ctx context.Context, method, field string, maxItems int, budget *int64) ([]json.RawMessage, error) {
	var (
		items  []json.RawMessage
		cursor string
		seen   = map[string]bool{}
	)
	for range maxPages {
		var params json.RawMessage
		if cursor != "" {
			var err error
			if params, err = json.Marshal(map[string]string{"cursor": cursor}); err != nil {
				return nil, err
			}
		}
		raw, err := s.Call(ctx, method, params, nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		fields := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("upstream %s: %s: %w", s.cfg.Name, method, err)
		}
		var got []json.RawMessage
		if f, ok := fields[field]; ok {
			if err := json.Unmarshal(f, &got); err != nil {
				return nil, fmt.Errorf("upstream %s: %s: %s: %w", s.cfg.Name, method, field, err)
			}
		}
		if len(items)+len(got) > maxItems {
			return nil, fmt.Errorf("upstream %s: %s: more than %d items", s.cfg.Name, method, maxItems)
		}
		if budget != nil {
			for _, it := range got {
				if *budget -= int64(len(it)); *budget < 0 {
					return nil, fmt.Errorf("upstream %s: %s: %w", s.cfg.Name, method, ErrListTooLarge)
				}
			}
		}
		items = append(items, got...)
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("upstream %s: %s: %w", s.cfg.Name, method, err)
		}
		if page.NextCursor == "" {
			return items, nil
		}
		if seen[page.NextCursor] {
			return nil, fmt.Errorf("upstream %s: %s: cursor %q repeated", s.cfg.Name, method, page.NextCursor)
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("upstream %s: %s: more than %d pages", s.cfg.Name, method, maxPages)
}
