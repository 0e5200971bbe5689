package transport_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

func TestIDJSONRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   transport.ID
		wire string
	}{
		{name: "zero int", id: transport.Int64ID(0), wire: `0`},
		{name: "positive int", id: transport.Int64ID(42), wire: `42`},
		{name: "negative int", id: transport.Int64ID(-7), wire: `-7`},
		{name: "max int64", id: transport.Int64ID(math.MaxInt64), wire: `9223372036854775807`},
		{name: "min int64", id: transport.Int64ID(math.MinInt64), wire: `-9223372036854775808`},
		{name: "empty string", id: transport.StringID(""), wire: `""`},
		{name: "ascii string", id: transport.StringID("req-1"), wire: `"req-1"`},
		{name: "digit string", id: transport.StringID("1"), wire: `"1"`},
		{name: "unicode string", id: transport.StringID("héllo 世界 🎉"), wire: `"héllo 世界 🎉"`},
		{name: "quotes and backslashes", id: transport.StringID(`a"b\c`), wire: `"a\"b\\c"`},
		{name: "control characters", id: transport.StringID("\n\r\t\x00\x1f"), wire: `"\n\r\t\u0000\u001f"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tc.id)
			require.NoError(t, err)
			assert.Equal(t, tc.wire, string(b))

			var got transport.ID
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, tc.id, got)
			assert.True(t, got.IsValid())
		})
	}
}

func TestIDUnmarshalAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wire string
		want transport.ID
	}{
		{name: "escaped unicode", wire: `"\u00e9\ud83c\udf89"`, want: transport.StringID("é🎉")},
		{name: "escaped slash", wire: `"a\/b"`, want: transport.StringID("a/b")},
		{name: "surrounding whitespace", wire: " \t42\n", want: transport.Int64ID(42)},
		{name: "negative zero", wire: `-0`, want: transport.Int64ID(0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got transport.ID
			require.NoError(t, got.UnmarshalJSON([]byte(tc.wire)))
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIDUnmarshalRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wire string
	}{
		{name: "null", wire: `null`},
		{name: "fraction", wire: `1.5`},
		{name: "exponent", wire: `1e3`},
		{name: "upper exponent", wire: `1E3`},
		{name: "integral fraction", wire: `1.0`},
		{name: "true", wire: `true`},
		{name: "false", wire: `false`},
		{name: "object", wire: `{}`},
		{name: "array", wire: `[]`},
		{name: "array of int", wire: `[1]`},
		{name: "above max int64", wire: `9223372036854775808`},
		{name: "below min int64", wire: `-9223372036854775809`},
		{name: "empty", wire: ``},
		{name: "whitespace", wire: "  "},
	}
	sentinel := transport.StringID("unchanged")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := sentinel
			require.Error(t, got.UnmarshalJSON([]byte(tc.wire)))
			assert.Equal(t, sentinel, got, "a failed decode must leave the id as it was")

			if json.Valid([]byte(tc.wire)) {
				// Through encoding/json too, as a struct field.
				var v struct{ ID transport.ID }
				v.ID = sentinel
				require.Error(t, json.Unmarshal([]byte(`{"ID":`+tc.wire+`}`), &v))
				assert.Equal(t, sentinel, v.ID)
			}
		})
	}
}

func TestIDMapKeysAreDistinct(t *testing.T) {
	t.Parallel()
	ids := []transport.ID{
		{},
		transport.Int64ID(0),
		transport.Int64ID(1),
		transport.StringID(""),
		transport.StringID("0"),
		transport.StringID("1"),
	}
	m := make(map[transport.ID]int)
	for i, id := range ids {
		m[id] = i
	}
	require.Len(t, m, len(ids))
	for i, id := range ids {
		assert.Equal(t, i, m[id], "id %#v", id)
	}
	assert.NotEqual(t, transport.StringID("1"), transport.Int64ID(1))
	assert.NotEqual(t, transport.ID{}, transport.StringID(""))
	assert.NotEqual(t, transport.ID{}, transport.Int64ID(0))

	// Decoded ids are usable as keys too: "1" and 1 stay apart.
	var s, n transport.ID
	require.NoError(t, json.Unmarshal([]byte(`"1"`), &s))
	require.NoError(t, json.Unmarshal([]byte(`1`), &n))
	assert.Equal(t, 5, m[s])
	assert.Equal(t, 2, m[n])
}

func TestIDAccessors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		id       transport.ID
		valid    bool
		isString bool
		str      string
		wire     string
	}{
		{name: "zero", id: transport.ID{}, valid: false, isString: false, str: "", wire: "null"},
		{name: "int", id: transport.Int64ID(-12), valid: true, isString: false, str: "-12", wire: "-12"},
		{name: "string", id: transport.StringID("ab\"c"), valid: true, isString: true, str: `ab"c`, wire: `"ab\"c"`},
		{name: "empty string", id: transport.StringID(""), valid: true, isString: true, str: "", wire: `""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.valid, tc.id.IsValid())
			assert.Equal(t, tc.isString, tc.id.IsString())
			assert.Equal(t, tc.str, tc.id.String())
			text, err := tc.id.AppendText([]byte("id="))
			require.NoError(t, err)
			assert.Equal(t, "id="+tc.str, string(text), "AppendText")
			b, err := tc.id.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, tc.wire, string(b))
		})
	}
}
