package openapi

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzRequestStaysUnderBase checks, for any path, query and header
// parameter values, that the request Call would send stays at the base
// URL's origin and under its path, keeps the path template's segments
// (a value is one segment, never a dot segment), has no fragment, and
// carries no header an argument may not set; values it cannot place so
// are refused as ErrArguments.
func FuzzRequestStaysUnderBase(f *testing.F) {
	data, err := os.ReadFile("testdata/pets.yaml")
	require.NoError(f, err)
	a, err := Load(data, "https://api.example:8443/base%20dir/v1")
	require.NoError(f, err)
	for _, seed := range [][3]string{
		{"rex", "1", "t"},
		{"../../admin", "1&admin=1", "x\r\nAuthorization: y"},
		{"%2F..%2F", "#frag", "Host: evil"},
		{"a/b?c#d", "?", ""},
		{"..", ".", "\x00"},
		{"//evil.example/x", "http://evil.example", "a\nb"},
		{"%", "%zz", "\u00e9"},
		{"@evil.example", ";", "\t"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	base, err := url.Parse(a.Base())
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, pet, limit, trace string) {
		if !utf8.ValidString(pet) || !utf8.ValidString(limit) || !utf8.ValidString(trace) {
			t.Skip("arguments are JSON: their strings are UTF-8")
		}
		for tool, args := range map[string]map[string]any{
			"showPet":  {"petId": pet},
			"listPets": {"limit": limit, "tags": []string{pet, limit}, "X-Trace": trace, "theme": pet},
		} {
			raw, err := json.Marshal(args)
			require.NoError(t, err)
			req, _, err := a.request(t.Context(), tool, raw)
			if err != nil {
				require.ErrorIs(t, err, ErrArguments, "%s", tool)
				continue
			}
			sent, err := url.Parse(req.URL.String())
			require.NoError(t, err, "the request's URL parses back")
			require.Equal(t, base.Scheme, sent.Scheme)
			require.Equal(t, base.Host, sent.Host)
			require.Nil(t, sent.User)
			require.Empty(t, sent.Fragment)
			require.Equal(t, req.URL.EscapedPath(), sent.EscapedPath(), "the path is sent as built")
			rest, ok := strings.CutPrefix(sent.EscapedPath(), base.EscapedPath()+"/")
			require.True(t, ok, "%q is under %q", sent.EscapedPath(), base.EscapedPath())
			segs := strings.Split(rest, "/")
			for _, s := range segs {
				require.NotContains(t, []string{"", ".", ".."}, s, "segment of %q", rest)
			}
			if tool == "showPet" {
				require.Equal(t, []string{"pets", url.PathEscape(pet)}, segs)
				got, err := url.PathUnescape(segs[1])
				require.NoError(t, err)
				require.Equal(t, pet, got, "the value arrives whole")
				require.Empty(t, req.Header.Values("Cookie"), "no cookie the operation does not declare")
			} else {
				require.Equal(t, []string{"pets"}, segs)
				q := sent.Query()
				require.Equal(t, []string{limit}, q["limit"])
				require.Equal(t, []string{pet, limit}, q["tags"])
				require.Len(t, q, 2, "only declared query parameters: %v", q)
				require.Equal(t, []string{"theme=" + pet}, req.Header.Values("Cookie"), "the declared cookie as given, alone")
			}
			for name := range req.Header {
				// Cookie carries the declared cookie parameters, checked above.
				require.True(t, name == "Cookie" || !forbiddenHeader(name), "header %s", name)
			}
			require.LessOrEqual(t, len(req.Header.Values("X-Trace")), 1)
		}
	})
}
