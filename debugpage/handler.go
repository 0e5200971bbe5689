package debugpage

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/vigil-mcp/vigil/internal/invisible"
	"github.com/vigil-mcp/vigil/server"
)

// Handler returns the live page of srv, showing what rec gathered, with
// the options opts. Relative to where it is mounted it serves, to GET and
// HEAD only:
//
//   - / (and the mount point itself): the page; ?format=json its JSON
//   - /trace/{id}: a kept trace's view; ?format=json its JSON
//   - /style.css and /favicon.svg: the page's stylesheet and icon
//
// Mount it under a prefix with http.StripPrefix, as http.FileServer is:
// its links start with the prefix stripped. Before it reads anything, it
// records srv's outcomes that wait for their batch. It also makes
// srv's methods, tools and prompts the only names rec's trace ring keys
// traces by. It has no authorization of its own: serve it where only
// operators reach (the page lists session ids, which are the only
// credential of an unauthenticated session).
func Handler(srv *server.Server, rec *Recorder, opts ...HandlerOption) http.Handler {
	var cfg handlerConfig
	for _, o := range opts {
		if o != nil {
			o.applyHandler(&cfg)
		}
	}
	rec.keyByServer(srv)
	return &debugPage{srv: srv, rec: rec, cfg: cfg}
}

func (p *debugPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	base := mountBase(r)
	switch path := r.URL.Path; path {
	case "", "/":
		p.rec.events.flush(p.srv)
		p.servePage(escaping{w}, r, base)
	case "/style.css":
		serveDebugAsset(w, r, "text/css; charset=utf-8", debugCSS)
	case "/favicon.svg":
		serveDebugAsset(w, r, "image/svg+xml", debugIcon)
	default:
		id, ok := strings.CutPrefix(path, "/trace/")
		if !ok || id == "" || strings.Contains(id, "/") {
			http.NotFound(w, r)
			return
		}
		p.rec.events.flush(p.srv)
		p.serveTrace(escaping{w}, r, base, id)
	}
}

// escaping is the ResponseWriter of the views (the page, a trace's, and
// their JSON): what they write passes through internal/invisible, so that
// the bidirectional controls and zero-width characters of a client's names
// show as the text \u202e on the page (HTML escaping leaves them raw, and
// they would reorder what the operator reads) and are \u202e escapes, the
// same strings, in the JSON.
type escaping struct{ http.ResponseWriter }

func (e escaping) Write(b []byte) (int, error) {
	return invisible.Writer{W: e.ResponseWriter}.Write(b)
}

// mountBase returns the prefix stripped from r's path before it reached
// the handler (http.StripPrefix), as sent: what the page's links start
// with. It is "" when nothing was stripped.
func mountBase(r *http.Request) string {
	sent, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return ""
	}
	base, ok := strings.CutSuffix(sent.EscapedPath(), r.URL.EscapedPath())
	if !ok {
		return ""
	}
	return base
}
