package invisible_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/invisible"
)

// TestIs: the bidirectional controls and the zero-width characters, and
// no printable character around them.
func TestIs(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2060, 0x2064, 0x2066, 0x2067, 0x2068, 0x2069, 0xFEFF} {
		assert.True(t, invisible.Is(r), "%U", r)
		assert.True(t, unicode.Is(unicode.Cf, r), "%U is a format character", r)
	}
	for _, r := range []rune{'a', ' ', 0x061B, 0x200A, 0x2010, 0x2014, 0x2028, 0x2029, 0x2065, 0x206A, 0xFEFE, 0xFF01, 'é', '世'} {
		assert.False(t, invisible.Is(r), "%U", r)
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                     "",
		"plain ascii, longer than eight bytes": "plain ascii, longer than eight bytes",
		"caf\u00e9 \u2014 \u4e16":              "caf\u00e9 \u2014 \u4e16",
		"\u202e":                               `\u202e`,
		"evil\u202egnp.exe":                    `evil\u202egnp.exe`,
		"a\u2066b\u2069c\u200fd\ufeff":         `a\u2066b\u2069c\u200fd\ufeff`,
		"\u2014\u202e\u2014":                   "\u2014" + `\u202e` + "\u2014",
		"\u061c\u0627":                         `\u061c` + "\u0627",
		"abcdefgh\u202eabcdefgh\u202e":         `abcdefgh\u202eabcdefgh\u202e`,
		"bad \xe2\x80 utf-8 \xe2":              "bad \xe2\x80 utf-8 \xe2",
	} {
		got := invisible.Escape([]byte(in))
		assert.Equal(t, want, string(got), "%q", in)
		assert.NotContains(t, string(got), "\u202e")
	}
}

// TestEscapeJSON: in a JSON string the escape is the same character.
func TestEscapeJSON(t *testing.T) {
	t.Parallel()
	in := map[string]string{"tool\u202e": "x\u2067y\u200b"}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	esc := invisible.Escape(b)
	want := `{"tool\u202e":"x\u2067y\u200b"}` // byte for byte: the escapes, not the characters
	assert.True(t, bytes.Equal([]byte(want), esc), "%s", esc)
	var back map[string]string
	require.NoError(t, json.Unmarshal(esc, &back))
	assert.Equal(t, in, back)
}

// TestEscapeNoAllocation: text without the characters is returned as it
// is, without a copy.
func TestEscapeNoAllocation(t *testing.T) {
	line := []byte(`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"request","method":"tools/call","name":"caf` + "\u00e9\u2014" + `"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if out := invisible.Escape(line); &out[0] != &line[0] {
			t.Fatal("copied")
		}
	})
	assert.Zero(t, allocs)
}

func TestWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := invisible.Writer{W: &buf}
	n, err := w.Write([]byte("a\u202eb\n"))
	require.NoError(t, err)
	assert.Equal(t, len("a\u202eb\n"), n, "the length given")
	n, err = w.Write([]byte("plain\n"))
	require.NoError(t, err)
	assert.Equal(t, 6, n)
	assert.Equal(t, "a\\u202eb\nplain\n", buf.String())
	assert.Equal(t, 2, strings.Count(buf.String(), "\n"))
}
