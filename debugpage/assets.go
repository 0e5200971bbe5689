package debugpage

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// assetTag is the ETag of an asset: a hash of its body.
func assetTag(body string) string {
	sum := sha256.Sum256([]byte(body))
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// serveDebugAsset serves body as contentType, with the page's headers and
// its ETag: a request that names it (If-None-Match) gets 304.
func serveDebugAsset(w http.ResponseWriter, r *http.Request, contentType, body string) {
	setDebugHeaders(w)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", contentType)
	tag := assetTag(body)
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write([]byte(body))
}

// debugIcon is the page's icon (favicon.svg).
const debugIcon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#1b5e20"/><circle cx="8" cy="8" r="3" fill="#fff"/></svg>`

// debugCSS is the page's stylesheet (style.css).
const debugCSS = `body { font: 13px/1.35 system-ui, sans-serif; margin: 0.8em 1.2em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .15em; display: inline-block; margin-right: .6em; }
h2 { font-size: 1.02em; margin: .9em 0 .3em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; }
td, th { padding: 1px 9px 1px 0; text-align: left; vertical-align: top; white-space: nowrap; }
th { color: #666; font-weight: 600; }
th.group { text-align: center; border-bottom: 1px solid #ddd; }
td.n, th.n { text-align: right; }
code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
.muted { color: #888; } .err { color: #b00020; } .ok { color: #1b5e20; } .warn { color: #a15c00; }
.zero { color: #bbb; }
a { color: #0b57d0; text-decoration: none; } a:hover { text-decoration: underline; }
.status { color: #666; }
.filters a { margin-right: .5em; }
.filter-on { background: #fff3cd; padding: 2px 6px; }
.grid { display: flex; flex-wrap: wrap; gap: 0 2.5em; align-items: flex-start; }
.kind { display: inline-block; min-width: 5.5em; font-weight: 600; }
.kind-error { color: #b00020; } .kind-cancelled { color: #1e66c9; } .kind-dropped { color: #a15c00; } .kind-slow { color: #6a1b9a; }
.detail { max-width: 40em; overflow: hidden; text-overflow: ellipsis; }
#charts { width: 440px; }
.chart { display: block; margin-bottom: 2px; }
.chart-title { font-size: 12px; color: #444; margin-top: 4px; }
.legend span { margin-right: .8em; font-size: 12px; white-space: nowrap; }
.sw-0 { color: #4caf50; } .sw-1 { color: #ff9800; } .sw-2 { color: #d32f2f; } .sw-3 { color: #1e88e5; }
.sw-4 { color: #5e35b1; } .sw-5 { color: #8d6e63; } .sw-6 { color: #00897b; } .sw-7 { color: #9e9e9e; }
.sw-8 { color: #f06292; } .sw-9 { color: #ad1457; } .sw-10 { color: #6d4c41; } .sw-11 { color: #424242; }
footer { margin-top: 1.5em; color: #777; font-size: 12px; }
`
