package debugpage

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
)

// debugStyles are the <style> blocks of the page and its trace views, byte for
// byte: the Content-Security-Policy allows exactly these (by hash), and no
// other style, script or source. A page that adds a <style> block lists
// its constant here; style="" attributes are not allowed (use classes, or
// SVG presentation attributes, which CSP does not govern).
func debugStyles() []string {
	return []string{traceViewCSS}
}

// debugCSP returns the Content-Security-Policy of the debug pages: nothing
// may load but the page's own stylesheet and icon, the listed inline
// styles, and images from data: URLs; no script at all, no framing, no
// form, no base.
func debugCSP() string {
	var b strings.Builder
	b.WriteString("default-src 'none'; style-src 'self'")
	for _, css := range debugStyles() {
		sum := sha256.Sum256([]byte(css))
		b.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'")
	}
	b.WriteString("; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	return b.String()
}

// setDebugHeaders sets the headers every response of the page
// carries: the strict Content-Security-Policy (debugCSP), no caching, no
// MIME sniffing, no referrer, no framing. Call it before writing the body,
// for HTML and JSON alike.
func setDebugHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", debugCSP())
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}
