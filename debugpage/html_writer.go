package debugpage

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// The page and the trace view are written by Go code, not html/template:
// executing a template calls reflect.Value.MethodByName with names known
// only at run time, which makes the linker keep every exported method of
// every type a program links (docs/performance.md, the README program's
// weight).
// htmlWriter is what keeps that code safe: each string it is given is
// escaped unless the code says it is markup.

// markup is HTML that the page's code wrote itself, written unescaped.
type markup string

// htmlWriter writes HTML to a buffered writer.
type htmlWriter struct{ w *bufio.Writer }

func newHTMLWriter(w io.Writer) *htmlWriter { return &htmlWriter{bufio.NewWriter(w)} }

// escaper escapes text and double-quoted attribute values as
// html/template does: & < > " ' + and NUL.
var escaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// f writes format with args as fmt.Fprintf does, each string argument
// escaped (escaper), markup as it is, numbers as fmt writes them.
func (h *htmlWriter) f(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = escaper.Replace(s)
		}
	}
	_, _ = fmt.Fprintf(h.w, format, args...)
}

// raw writes s, markup of the page's code, as it is.
func (h *htmlWriter) raw(s string) { _, _ = h.w.WriteString(s) }

// flush writes what is buffered.
func (h *htmlWriter) flush() error { return h.w.Flush() }

// safeURL returns u for an href, or "#ZgotmplZ" (as html/template writes
// it) when u has a scheme other than http or https, so that a link never
// runs script (javascript:, data:); it is escaped when written.
func safeURL(u string) string {
	if i := strings.IndexAny(u, ":/?#"); i >= 0 && u[i] == ':' {
		p, err := url.Parse(u)
		if err != nil || (!strings.EqualFold(p.Scheme, "http") && !strings.EqualFold(p.Scheme, "https")) {
			return "#ZgotmplZ"
		}
	}
	return u
}

// either returns s, or alt when s is empty.
func either(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// joined returns the list as "a, b, c", each escaped.
func joined(list []string) markup {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = escaper.Replace(s)
	}
	return markup(strings.Join(out, ", "))
}
