package middleware_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// optionMisuses are calls that give a constructor an option it does not
// read, each with the option type the compiler must say it is not.
var optionMisuses = []struct{ call, notA string }{
	{`middleware.Tracing(middleware.WithTimeout(time.Second))`, "TracingOption"},
	{`middleware.Tracing(middleware.WithRateLimit(1, 1))`, "TracingOption"},
	{`middleware.TracingCalls(middleware.WithUntrustedTraceContext())`, "TracingCallsOption"},
}

// optionUses gives Tracing and TracingCalls every option they read, and
// NewInstrumentation every option: they must compile.
const optionUses = `package right

import (
	"time"

	"github.com/vigil-mcp/vigil/middleware"
)

func uses() {
	tracer, propagators := middleware.WithTracerProvider(nil), middleware.WithPropagators(nil)
	_ = middleware.Tracing(tracer, propagators, middleware.WithUntrustedTraceContext())
	_ = middleware.TracingCalls(tracer, propagators)
	_, _ = middleware.NewInstrumentation(
		tracer, propagators, middleware.WithUntrustedTraceContext(),
		middleware.WithRegisterer(nil), middleware.WithMetricsOptions(),
		middleware.WithRequestLog(nil), middleware.WithLogLevel(nil), middleware.WithAuditLog(nil), middleware.WithAuditArgumentValues("t"),
		middleware.WithTimeout(time.Second), middleware.WithTimeoutFor(nil),
		middleware.WithConcurrencyLimit(1), middleware.WithLimitFor(nil), middleware.WithLimitWait(0), middleware.WithToolShare(0.5, nil),
		middleware.WithRateLimit(1, 1), middleware.WithToolRateLimit("t", 1, 1), middleware.WithSharedRateLimits(nil),
	)
}
`

// TestOptionsMisuseDoesNotCompile builds, as packages of this module
// (testkit.GoInModule), a package of the misuses
// (wrong) and one of the right uses (right), with one go build: each
// misuse must fail to compile, saying which option type the option is
// not, and the right uses must compile.
func TestOptionsMisuseDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var misuses strings.Builder
	misuses.WriteString("package wrong\n\nimport (\n\t\"time\"\n\n\t\"github.com/vigil-mcp/vigil/middleware\"\n)\n\nvar (\n\t_ = time.Second\n")
	const firstLine = 11 // of the first misuse
	for _, m := range optionMisuses {
		fmt.Fprintf(&misuses, "\t_ = %s\n", m.call)
	}
	misuses.WriteString(")\n")
	out, err := testkit.GoInModule(t, root, map[string]string{
		"wrong/wrong.go": misuses.String(),
		"right/right.go": optionUses,
	}, "build", "./...")
	if err == nil {
		t.Fatalf("the misuses compiled:\n%s", misuses.String())
	}
	if strings.Contains(string(out), "right") {
		t.Fatalf("the right uses do not compile:\n%s", out)
	}
	for i, m := range optionMisuses {
		line := fmt.Sprintf(`wrong%cwrong\.go:%d:\d+: .*does not implement middleware\.%s \(missing method `, filepath.Separator, firstLine+i, m.notA)
		if !regexp.MustCompile(line).Match(out) {
			t.Errorf("%s: no error %q in:\n%s", m.call, line, out)
		}
	}
	if n, want := strings.Count(string(out), "does not implement"), len(optionMisuses); n != want {
		t.Errorf("%d errors, want %d:\n%s", n, want, out)
	}
}
