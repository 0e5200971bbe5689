package gateway

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
)

// Selecting an OpenAPI upstream's operations in the catalog: an
// endpoint's tools selector UPSTREAM/tag:TAG picks the tools whose
// operation has the tag TAG, UPSTREAM/path:GLOB those whose path template
// GLOB matches (matchesPath). Mount and SetCatalog refuse one that picks
// no operation (checkOperations), as a tool filter that matches nothing.

// String returns the selector as the catalog writes it.
func (s selector) String() string {
	switch {
	case s.tag != "":
		return "tag:" + s.tag
	case s.opTag != "":
		return s.upstream + "/tag:" + s.opTag
	case s.opPath != "":
		return s.upstream + "/path:" + s.opPath
	}
	return s.upstream + "/" + s.glob
}

// picksOperation reports whether s, an OpenAPI selector of op's upstream,
// picks the operation op (nil: not an OpenAPI upstream's tool).
func (s selector) picksOperation(op *openapi.Tool) bool {
	switch {
	case op == nil:
		return false
	case s.opTag != "":
		return slices.Contains(op.Tags, s.opTag)
	case s.opPath != "":
		return matchesPath(s.opPath, op.Path)
	}
	return false
}

// matchesPath reports whether the path.Match glob matches the path
// template p or one of its leading segments: "/repos/*/*/issues*" matches
// "/repos/{owner}/{repo}/issues" and everything under it,
// "/repos/{owner}/{repo}/issues/{issue_number}/comments" included.
func matchesPath(glob, p string) bool {
	for {
		if ok, _ := path.Match(glob, p); ok {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			return false
		}
		p = p[:i]
	}
}

// checkOperations refuses an OpenAPI selector of c's endpoints that picks
// none of its upstream's operations (apis, by upstream name): a tag no
// operation has, a path glob no path matches; the message lists the
// tags there are.
func (c *Catalog) checkOperations(apis map[string]*openapi.API) error {
	if c == nil {
		return nil
	}
	for _, e := range c.allEndpoints() {
		for _, s := range e.tools {
			api := apis[s.upstream]
			if api == nil || s.opTag == "" && s.opPath == "" {
				continue
			}
			tools := api.Tools()
			if slices.ContainsFunc(tools, func(t openapi.Tool) bool { return s.picksOperation(&t) }) {
				continue
			}
			if s.opTag != "" {
				return fmt.Errorf("gateway: catalog: endpoint %s: %s: no operation of upstream %s has the tag %q (its tags: %s)", e.name, s, s.upstream, s.opTag, strings.Join(operationTags(tools), ", "))
			}
			example := "/pets/{petId}"
			if len(tools) > 0 {
				example = tools[0].Path
			}
			return fmt.Errorf("gateway: catalog: endpoint %s: %s: no path of upstream %s matches %q (a path.Match glob over path templates such as %q)", e.name, s, s.upstream, s.opPath, example)
		}
	}
	return nil
}

// operationTags returns the tags of tools, sorted, each once; "none" when
// there is none.
func operationTags(tools []openapi.Tool) []string {
	var tags []string
	for _, t := range tools {
		tags = append(tags, t.Tags...)
	}
	slices.Sort(tags)
	if tags = slices.Compact(tags); len(tags) == 0 {
		return []string{"none"}
	}
	return tags
}

// apisByName maps each OpenAPI upstream of ups to its description
// (apis, in the order of ups).
func apisByName(ups []Upstream, apis []*openapi.API) map[string]*openapi.API {
	byName := map[string]*openapi.API{}
	for i, api := range apis {
		if api != nil {
			byName[ups[i].Name] = api
		}
	}
	return byName
}
