package upstream

import (
	"context"
	"encoding/json"
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
