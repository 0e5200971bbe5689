package debugpage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSafeURL: a link of the page is http, https or relative; any other
// scheme (a trace link template an operator got wrong, a value a client
// chose) becomes the inert "#ZgotmplZ", as html/template made it.
func TestSafeURL(t *testing.T) {
	for _, tc := range [][2]string{
		{"/debug/vigil?key=a", "/debug/vigil?key=a"},
		{"https://jaeger.example/trace/abc", "https://jaeger.example/trace/abc"},
		{"HTTP://grafana.example/explore?x=1", "HTTP://grafana.example/explore?x=1"},
		{"javascript:alert(1)", "#ZgotmplZ"},
		{" JavaScript:alert(1)", "#ZgotmplZ"},
		{"data:text/html,<script>", "#ZgotmplZ"},
		{"?format=json", "?format=json"},
		{"trace/0123456789abcdef:x", "trace/0123456789abcdef:x"},
	} {
		assert.Equal(t, tc[1], safeURL(tc[0]), tc[0])
	}
}

// TestHTMLWriterEscapes: every string argument is escaped as html/template
// escapes text and attributes; markup is not.
func TestHTMLWriterEscapes(t *testing.T) {
	var b bytes.Buffer
	h := newHTMLWriter(&b)
	h.f(`<td title="%s">%s %d %s</td>`, `"><img src=x onerror=alert(1)>`, "a+b & 'c'\x00", 7, markup("<b>ok</b>"))
	require.NoError(t, h.flush())
	assert.Equal(t, `<td title="&#34;&gt;&lt;img src=x onerror=alert(1)&gt;">a&#43;b &amp; &#39;c&#39;`+"\uFFFD"+` 7 <b>ok</b></td>`, b.String())
}
