package debugpage

// DefaultTraceRing is how many routine traces a Recorder's trace ring
// keeps unless [WithTraceRing] says otherwise.
const DefaultTraceRing = 100

// RecorderOption configures a [Recorder]: what it keeps. [Handler] takes a
// [HandlerOption] instead.
type RecorderOption interface{ applyRecorder(*recorderConfig) }

type recorderOption func(*recorderConfig)

func (f recorderOption) applyRecorder(c *recorderConfig) { f(c) }

type recorderConfig struct {
	limits ringLimits
}

// WithTraceRing bounds the trace ring. It keeps the newest traces
// routine (successful) traces, besides the slowest and the last failed,
// cancelled and dropped ones of each method or tool, which it keeps
// however much routine traffic follows them; less than 1 counts as 1 (the
// default is [DefaultTraceRing]). maxBytes is the most its kept spans may
// hold, by its estimate; past it, the oldest routine traces go first.
// Below 1 it keeps the default, 16 MiB.
func WithTraceRing(traces int, maxBytes int64) RecorderOption {
	return recorderOption(func(c *recorderConfig) {
		c.limits.Recent = traces
		if maxBytes > 0 {
			c.limits.MaxBytes = maxBytes
		}
	})
}

// HandlerOption configures the page [Handler] serves: what it tells about
// the process around the server. [NewRecorder] takes a [RecorderOption]
// instead.
type HandlerOption interface{ applyHandler(*handlerConfig) }

type handlerOption func(*handlerConfig)

func (f handlerOption) applyHandler(c *handlerConfig) { f(c) }

type handlerConfig struct {
	name       string // WithService; "": "MCP server"
	version    string
	ready      func() error
	status     func() []string // WithStatus
	exporter   string          // "": "in-memory ring" with the Recorder's ring, else "none"
	metricsURL string          // "": no link
}

// WithService names the service the page shows, and its version: the
// page's title and its JSON show them (Vigil's own version is shown
// apart). Without it, the page is titled "MCP server".
func WithService(name, version string) HandlerOption {
	return handlerOption(func(c *handlerConfig) { c.name, c.version = name, version })
}

// WithReadiness sets what the page asks whether the service is ready: it
// shows ready while check returns nil, and draining while it returns an
// error; check is called on every page view. By default the page shows
// ready.
func WithReadiness(check func() error) HandlerOption {
	return handlerOption(func(c *handlerConfig) { c.ready = check })
}

// WithStatus adds to the page's header, and to its JSON's status, the
// lines status returns, called on every page view: the state of what the
// service depends on, such as each of a gateway's upstreams. They are
// shown as they are, and must hold nothing secret.
func WithStatus(status func() []string) HandlerOption {
	return handlerOption(func(c *handlerConfig) { c.status = status })
}

// WithTraceExporter names where the server's spans go, for the page's
// header and its note on kept traces. By default it is "in-memory ring"
// once the Recorder's SpanExporter was taken, else "none".
func WithTraceExporter(name string) HandlerOption {
	return handlerOption(func(c *handlerConfig) { c.exporter = name })
}

// WithMetricsLink makes the page's header link to url, where the server's
// metrics are served (such as "/metrics"). By default there is no link.
func WithMetricsLink(url string) HandlerOption {
	return handlerOption(func(c *handlerConfig) { c.metricsURL = url })
}
