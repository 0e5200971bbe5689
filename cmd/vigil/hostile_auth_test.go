package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floodIssuer is an authorization server for introspection: its metadata
// names its introspection endpoint, which answers the token valid active
// for resource and any other inactive, the latter only once release is
// closed; each such call is announced on junk.
type floodIssuer struct {
	srv        *httptest.Server
	valid      string
	resource   string
	junkCalls  atomic.Int64
	validCalls atomic.Int64
	junk       chan struct{}
	release    chan struct{}
}

func newFloodIssuer(t *testing.T, resource string) *floodIssuer {
	t.Helper()
	as := &floodIssuer{valid: randomToken(t), resource: resource, junk: make(chan struct{}, 1000), release: make(chan struct{})}
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": as.srv.URL, "introspection_endpoint": as.srv.URL + "/introspect"})
		case "/introspect":
			if r.PostFormValue("token") == as.valid {
				as.validCalls.Add(1)
				_ = json.NewEncoder(w).Encode(map[string]any{
					"active": true, "sub": "alice", "client_id": "c", "aud": as.resource, "exp": time.Now().Add(time.Hour).Unix(),
				})
				return
			}
			as.junkCalls.Add(1)
			as.junk <- struct{}{}
			select {
			case <-as.release:
			case <-r.Context().Done():
			}
			_, _ = io.WriteString(w, `{"active":false}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.srv.Close)
	t.Cleanup(func() {
		select {
		case <-as.release:
		default:
			close(as.release)
		}
	})
	return as
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// fromAddr returns a client whose connections come from the loopback
// address ip (any 127.x.y.z is this host's on Linux).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1000},
		Timeout:   30 * time.Second,
	}
}

func postInitialize(ctx context.Context, hc *http.Client, mcpURL, token string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(matrixInitialize))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp, string(b), nil
}

// TestHostileIntrospectionFlood: vigil introspecting tokens, with its
// defaults. A client floods it with 500 concurrent requests, each with a
// fresh made-up token, while the authorization server is slow to answer:
// the flood costs the authorization server at most a handful of calls (its
// address holds at most half of the calls at once), the rest is answered
// 503 verifier_busy with Retry-After: 1 and counted; a valid token
// presented by another client during the flood is served at once.
func TestHostileIntrospectionFlood(t *testing.T) {
	const flood = 500
	port := authResource(t)
	as := newFloodIssuer(t, port.resource)
	v := startVigilAuth(t, port, as.srv.URL, []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t",
	})
	before := v.authFailures(t)

	attacker := fromAddr("127.0.0.2")
	defer attacker.CloseIdleConnections()
	statuses, retryAfter := make([]int, flood), make([]string, flood)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range flood {
		token := randomToken(t)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			resp, body, err := postInitialize(t.Context(), attacker, v.url, token)
			if err != nil {
				statuses[i] = -1
				retryAfter[i] = err.Error()
				return
			}
			statuses[i], retryAfter[i] = resp.StatusCode, resp.Header.Get("Retry-After")
			if resp.StatusCode != http.StatusServiceUnavailable {
				retryAfter[i] = body
			}
		}()
	}
	ready.Wait()
	close(start)
	// The attacker's address may hold half of the 8 calls at once: wait
	// for those to reach the authorization server, which holds them.
	for range 4 {
		select {
		case <-as.junk:
		case <-time.After(30 * time.Second):
			t.Fatalf("the flood did not reach the authorization server: %d calls", as.junkCalls.Load())
		}
	}

	resp, body, err := postInitialize(t.Context(), v.hc, v.url, as.valid)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a valid token during the flood: %s", body)
	assert.Equal(t, int64(1), as.validCalls.Load())

	close(as.release)
	done.Wait()
	count := map[int]int{}
	for i, s := range statuses {
		count[s]++
		switch s {
		case http.StatusServiceUnavailable:
			assert.Equal(t, "1", retryAfter[i], "request %d: Retry-After", i)
		case http.StatusUnauthorized:
		default:
			t.Errorf("request %d of the flood: status %d: %.300s", i, s, retryAfter[i])
		}
	}
	t.Logf("flood answers: %v; calls to the authorization server: %d", count, as.junkCalls.Load())
	assert.LessOrEqual(t, as.junkCalls.Load(), int64(100), "calls to the authorization server")
	assert.Equal(t, int64(count[http.StatusUnauthorized]), as.junkCalls.Load(), "each 401 was one call, each 503 none")
	assert.GreaterOrEqual(t, count[http.StatusServiceUnavailable], flood-100)

	after := v.authFailures(t)
	assert.InDelta(t, count[http.StatusServiceUnavailable], after["verifier_busy"]-before["verifier_busy"], 0, "every refusal counted")
	assert.InDelta(t, count[http.StatusUnauthorized], after["invalid_token"]-before["invalid_token"], 0)
}
