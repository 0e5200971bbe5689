package openapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A seen is what the test API received.
type seen struct {
	method, uri, trace, auth, ctype, body string
}

// petsServer serves the pets API under /v1, recording each request on
// got; the pet "teapot" answers 418, "down" 503, and "slow" waits for
// release.
func petsServer(t *testing.T, got chan<- seen, release <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Header.Get("X-Trace"), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		switch {
		case r.URL.Path == "/v1/pets" && r.Method == "GET":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `[{"name":"rex"}]`)
		case r.URL.Path == "/v1/pets" && r.Method == "POST":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b)
		case r.URL.Path == "/v1/pets/teapot":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, `{"title":"short and stout"}`)
		case r.URL.Path == "/v1/pets/down":
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
		case r.URL.Path == "/v1/pets/slow":
			<-release
		case r.URL.Path == "/v1/pets/big":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
		case r.URL.Path == "/v1/pets/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte{0xff, 0xfe, 0})
		case r.URL.Path == "/v1/pets/away":
			http.Redirect(w, r, "http://elsewhere.invalid/steal", http.StatusFound)
		case r.URL.Path == "/v1/pets/moved":
			http.Redirect(w, r, "/v1/pets/rex", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"name":"`+strings.TrimPrefix(r.URL.EscapedPath(), "/v1/pets/")+`"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// call calls tool on a with args through the default-like client.
func call(t *testing.T, a *API, tool, args string) Result {
	t.Helper()
	r, err := a.Call(t.Context(), &http.Client{}, tool, json.RawMessage(args))
	require.NoError(t, err)
	return r
}

// TestCallMapsAnswers checks each kind of answer: JSON success as text and
// structured content (wrapped when the schema is), 4xx and 5xx as tool
// errors with status and body, bounds, binary bodies, redirects.
func TestCallMapsAnswers(t *testing.T) {
	got := make(chan seen, 10)
	srv := petsServer(t, got, nil)
	a := loadPets(t, srv.URL+"/v1/")
	a.MaxResponseBytes = 64

	r := call(t, a, "listPets", `{"limit":5,"tags":["a b","c&d"],"X-Trace":"t1"}`)
	s := <-got
	assert.Equal(t, seen{method: "GET", uri: "/v1/pets?limit=5&tags=a+b&tags=c%26d", trace: "t1"}, s)
	assert.False(t, r.IsError)
	assert.Equal(t, 200, r.Status)
	assert.JSONEq(t, `[{"name":"rex"}]`, r.Text)
	assert.JSONEq(t, `{"result":[{"name":"rex"}]}`, string(r.Structured))

	r = call(t, a, "post_pets", `{"body":{"name":"rex"}}`)
	s = <-got
	assert.Equal(t, "application/json", s.ctype)
	assert.JSONEq(t, `{"name":"rex"}`, s.body)
	assert.JSONEq(t, `{"name":"rex"}`, string(r.Structured), "an object schema is not wrapped")

	r = call(t, a, "showPet", `{"petId":"teapot"}`)
	<-got
	assert.True(t, r.IsError)
	assert.Equal(t, `HTTP 418 I'm a teapot: {"title":"short and stout"}`, r.Text)
	assert.Nil(t, r.Structured)

	r = call(t, a, "showPet", `{"petId":"down"}`)
	<-got
	assert.True(t, r.IsError)
	assert.Equal(t, "HTTP 503 Service Unavailable: database unreachable\n", r.Text)

	r = call(t, a, "showPet", `{"petId":"big"}`)
	<-got
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, "exceeds 64 bytes")

	r = call(t, a, "showPet", `{"petId":"bin"}`)
	<-got
	assert.False(t, r.IsError)
	assert.Equal(t, "(3 bytes of application/octet-stream, not shown)", r.Text)

	r = call(t, a, "showPet", `{"petId":"away"}`)
	<-got
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, "redirect to another origin (http://elsewhere.invalid) refused")

	r = call(t, a, "showPet", `{"petId":"moved"}`)
	<-got
	<-got
	assert.False(t, r.IsError, "a redirect within the origin is followed: %s", r.Text)
	assert.JSONEq(t, `{"name":"rex"}`, string(r.Structured))
}

// TestCallPathStaysInSegment checks that a path parameter's value stays
// inside its segment, whatever it holds.
func TestCallPathStaysInSegment(t *testing.T) {
	got := make(chan seen, 10)
	srv := petsServer(t, got, nil)
	a := loadPets(t, srv.URL+"/v1")
	for value, uri := range map[string]string{
		"../admin":    "/v1/pets/..%2Fadmin",
		"a%2Fb":       "/v1/pets/a%252Fb",
		"x?admin=1":   "/v1/pets/x%3Fadmin=1",
		"x#frag":      "/v1/pets/x%23frag",
		"{petId}":     "/v1/pets/%7BpetId%7D",
		"caf\u00e9 1": "/v1/pets/caf%C3%A9%201",
	} {
		arg, _ := json.Marshal(map[string]string{"petId": value})
		call(t, a, "showPet", string(arg))
		assert.Equal(t, uri, (<-got).uri, "value %q", value)
	}
}

// TestCallRefusesArguments checks the arguments Call refuses before any
// request: unknown tools and arguments, missing required ones, dot
// segments, and a header no argument may set.
func TestCallRefusesArguments(t *testing.T) {
	a := loadPets(t, "http://127.0.0.1:1/v1")
	for args, want := range map[string]string{
		`{}`:             `"petId" is required`,
		`{"petId":".."}`: `may not be empty, "." or ".."`,
		`{"petId":"."}`:  `may not be empty, "." or ".."`,
		`{"petId":""}`:   `may not be empty`,
		`{"petId":"a","Authorization":"Bearer x"}`: `unknown argument "Authorization"`,
		`[1]`: "not a JSON object",
	} {
		_, err := a.Call(t.Context(), &http.Client{}, "showPet", json.RawMessage(args))
		require.ErrorIs(t, err, ErrArguments, "%s", args)
		assert.Contains(t, err.Error(), want)
	}
	_, err := a.Call(t.Context(), &http.Client{}, "listPets", json.RawMessage(`{"X-Trace":"a\r\nAuthorization: x"}`))
	require.ErrorIs(t, err, ErrArguments)
	for _, theme := range []string{"dark; admin=1", "a\"b", "caf\u00e9", "a b"} {
		arg, _ := json.Marshal(map[string]string{"theme": theme})
		_, err = a.Call(t.Context(), &http.Client{}, "listPets", arg)
		require.ErrorIs(t, err, ErrArguments, "cookie %q", theme)
	}
	req, _, err := a.request(t.Context(), "listPets", json.RawMessage(`{"theme":"dark"}`))
	require.NoError(t, err)
	assert.Equal(t, "theme=dark", req.Header.Get("Cookie"))
	_, err = a.Call(t.Context(), &http.Client{}, "nope", nil)
	require.ErrorIs(t, err, ErrUnknownTool)
}

// TestCallTransportFailure checks that an API that cannot be reached is a
// tool error with its cause.
func TestCallTransportFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	a := loadPets(t, base)
	r := call(t, a, "showPet", `{"petId":"rex"}`)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, "request failed: ")
	assert.Contains(t, r.Text, "connection refused")
}

// TestCallTimeout checks that an API that does not answer within Timeout
// is a tool error saying so, and that a caller's cancel is the caller's
// error, not a result.
func TestCallTimeout(t *testing.T) {
	got := make(chan seen, 10)
	release := make(chan struct{})
	srv := petsServer(t, got, release)
	defer close(release)
	a := loadPets(t, srv.URL+"/v1")
	a.Timeout = 50 * time.Millisecond
	r := call(t, a, "showPet", `{"petId":"slow"}`)
	<-got
	assert.True(t, r.IsError)
	assert.Equal(t, "request failed: no answer within 50ms", r.Text)

	a.Timeout = time.Minute
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error)
	go func() {
		_, err := a.Call(ctx, &http.Client{}, "showPet", json.RawMessage(`{"petId":"slow"}`))
		done <- err
	}()
	<-got
	cancel(context.Canceled)
	assert.ErrorIs(t, <-done, context.Canceled)
}
