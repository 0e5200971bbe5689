package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// openapiDir holds the REST upstream's end-to-end components, Prism and
// the TypeScript SDK v2 client (package.json, package-lock.json,
// openapi-client.mjs); `make test` installs their node_modules.
const openapiDir = "testdata/openapi"

// openapiComponents returns node, or skips the test (fails it under
// CI=true) when node, Prism or the client is missing.
func openapiComponents(t *testing.T) string {
	t.Helper()
	testkit.External(t, "node, @stoplight/prism-cli and the TypeScript SDK v2 client")
	node, err := exec.LookPath("node")
	if err != nil {
		missingComponent(t, "node is not installed")
	}
	for _, p := range []string{"node_modules/.bin/prism", "node_modules/@modelcontextprotocol/client"} {
		if _, err := os.Stat(filepath.Join(openapiDir, p)); err != nil {
			missingComponent(t, openapiDir+"/"+p+" is missing: run `make test` (or `make openapi-deps`)")
		}
	}
	return node
}

// A restCall is one call of a REST upstream's tool and the request the
// API should get for it, which the test sends the API directly too.
type restCall struct {
	tool   string
	args   map[string]any
	method string
	target string // the path and query the API gets
	body   string // the JSON body, "" for none
}

// An apiAnswer is what the API answered a request.
type apiAnswer struct {
	status      string // "200 OK"
	code        int
	contentType string
	body        []byte
}

// directAgent is the User-Agent of the test's direct requests, which an
// API's recording leaves out.
const directAgent = "vigil-test-direct"

// callDirect sends c's request to the API at base with header, as vigil
// sends it (its Accept too), and returns the answer.
func callDirect(t *testing.T, hc *http.Client, base string, c restCall, header http.Header) apiAnswer {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, base+c.target, body)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	for k, v := range c.args { // the tests' header parameters: their names begin with "X-"
		if s, ok := v.(string); ok && strings.HasPrefix(k, "X-") {
			req.Header.Set(k, s)
		}
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	req.Header.Set("User-Agent", directAgent)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return apiAnswer{status: resp.Status, code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
}

// wantResult is the tool result the answer should be through vigil, by
// docs/gateway.md's "Answers": a 2xx's body as text, and as structured
// content (wrapped as "result" when it is not an object) when the tool
// has an output schema and the body is JSON; a 4xx or 5xx a tool error,
// "HTTP ", the status and the body.
func wantResult(a apiAnswer, hasOutput bool) (text string, structured json.RawMessage, isError bool) {
	if a.code >= 200 && a.code < 300 {
		isJSON := strings.HasPrefix(a.contentType, "application/json") || strings.Contains(strings.Split(a.contentType, ";")[0], "+json")
		if hasOutput && isJSON && json.Valid(a.body) {
			structured = bytes.TrimSpace(a.body)
			if structured[0] != '{' {
				structured = json.RawMessage(`{"result":` + string(structured) + `}`)
			}
		}
		return string(a.body), structured, false
	}
	text = "HTTP " + a.status
	if len(a.body) > 0 {
		text += ": " + string(a.body)
	}
	return text, nil, true
}

// listedTool is a tool as the client listed it.
type listedTool struct {
	Name         string          `json:"name"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  map[string]any  `json:"annotations"`
}

// restResult is a tools/call result as the client got it.
type restResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// clientRun is what openapi-client.mjs printed.
type clientRun struct {
	protocol string
	tools    []listedTool
	results  []restResult
}

// runOpenAPIClient runs openapi-client.mjs against vigil at mcpURL in era
// (legacy or modern), calling each of calls' tools (prefixed with the
// upstream's name) with its arguments, and returns what it got.
func runOpenAPIClient(t *testing.T, node, mcpURL, era, prefix string, calls []restCall) clientRun {
	t.Helper()
	type call struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	in := make([]call, len(calls))
	for i, c := range calls {
		in[i] = call{Name: prefix + c.tool, Arguments: c.args}
		if in[i].Arguments == nil {
			in[i].Arguments = map[string]any{}
		}
	}
	input, err := json.Marshal(in)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "openapi-client.mjs", mcpURL, era)
	cmd.Dir = openapiDir
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "openapi-client.mjs %s:\n%s\n%s", era, out, stderr.String())
	var run clientRun
	lines := bufio.NewScanner(bytes.NewReader(out))
	lines.Buffer(nil, 64<<20)
	for lines.Scan() {
		var m struct {
			Protocol string          `json:"protocol"`
			Tools    []listedTool    `json:"tools"`
			Name     string          `json:"name"`
			Result   *restResult     `json:"result"`
			Error    json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m), "%s", lines.Text())
		switch {
		case m.Protocol != "":
			run.protocol = m.Protocol
		case m.Tools != nil:
			run.tools = m.Tools
		case m.Result != nil:
			run.results = append(run.results, *m.Result)
		default:
			require.Failf(t, "a call failed", "%s: %s", m.Name, m.Error)
		}
	}
	require.NoError(t, lines.Err())
	require.Len(t, run.results, len(calls))
	return run
}

// eras are the client's eras and the protocol version each negotiates.
var eras = []struct{ name, protocol string }{{"legacy", "2025-11-25"}, {"modern", "2026-07-28"}}

// checkThroughVigil runs the client in both eras against vigil at mcpURL,
// whose upstream prefix (as "pets_") serves the API at base, and checks
// that it lists exactly the tools want and that each call's result is
// what the API answers the same request sent directly with header.
// afterClient, when not nil, runs after each client run, before the
// direct requests.
func checkThroughVigil(t *testing.T, node, mcpURL, prefix, base string, header http.Header, want []string, calls []restCall, afterClient func(t *testing.T)) []clientRun {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	var runs []clientRun
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			run := runOpenAPIClient(t, node, mcpURL, era.name, prefix, calls)
			runs = append(runs, run)
			if afterClient != nil {
				afterClient(t)
			}
			assert.Equal(t, era.protocol, run.protocol)
			output := map[string]bool{}
			var listed []string
			for _, tl := range run.tools {
				if name, ok := strings.CutPrefix(tl.Name, prefix); ok {
					listed = append(listed, name)
					output[name] = len(tl.OutputSchema) > 0
				}
			}
			require.ElementsMatch(t, want, listed, "every operation is listed")
			called := map[string]bool{}
			statuses := map[int]int{}
			defer func() {
				t.Logf("%d calls through vigil, %s: the API's answers by status %v", len(calls), run.protocol, statuses)
			}()
			for i, c := range calls {
				called[c.tool] = true
				direct := callDirect(t, hc, base, c, header)
				statuses[direct.code]++
				text, structured, isError := wantResult(direct, output[c.tool])
				got := run.results[i]
				require.Len(t, got.Content, 1, "call %d (%s)", i, c.tool)
				assert.Equal(t, "text", got.Content[0].Type)
				assert.Equal(t, text, got.Content[0].Text, "call %d (%s): the API's answer %s", i, c.tool, direct.status)
				assert.Equal(t, isError, got.IsError, "call %d (%s)", i, c.tool)
				if structured == nil {
					assert.Empty(t, got.StructuredContent, "call %d (%s)", i, c.tool)
				} else {
					assert.JSONEq(t, string(structured), string(got.StructuredContent), "call %d (%s)", i, c.tool)
				}
			}
			for _, name := range want {
				assert.True(t, called[name], "no call of the operation %s: add one", name)
			}
		})
	}
	return runs
}

// startPrism runs `prism mock` on the description at spec and returns its
// URL once it listens.
func startPrism(t *testing.T, node, spec string) string {
	t.Helper()
	port := strconv.Itoa(freePort(t))
	entry, err := filepath.Abs(filepath.Join(openapiDir, "node_modules", ".bin", "prism"))
	require.NoError(t, err)
	cmd := exec.Command(node, entry, "mock", "--host", "127.0.0.1", "--port", port, spec)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	ready := make(chan struct{})
	logs := &lockedBuffer{}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		listening := false
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			_, _ = logs.Write(append(lines.Bytes(), '\n'))
			if strings.Contains(lines.Text(), "Prism is listening on") && !listening {
				listening = true
				close(ready)
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-drained
		if t.Failed() {
			t.Logf("prism:\n%s\n%s", logs.String(), stderr.String())
		}
	})
	select {
	case <-ready:
	case <-drained:
		require.FailNow(t, "prism exited", "%s\n%s", logs.String(), stderr.String())
	case <-time.After(60 * time.Second):
		require.FailNow(t, "prism did not start within 60 s", "%s\n%s", logs.String(), stderr.String())
	}
	return "http://127.0.0.1:" + port
}

// petstoreCalls call each of the Swagger Petstore 3 description's 19
// operations once, valid by its schemas.
var petstoreCalls = []restCall{
	{"updatePet", map[string]any{"body": map[string]any{"id": 10, "name": "doggie", "photoUrls": []string{"u"}, "status": "sold"}}, "PUT", "/pet", `{"id":10,"name":"doggie","photoUrls":["u"],"status":"sold"}`},
	{"addPet", map[string]any{"body": map[string]any{"name": "rex", "photoUrls": []string{}, "category": map[string]any{"id": 1, "name": "Dogs"}}}, "POST", "/pet", `{"category":{"id":1,"name":"Dogs"},"name":"rex","photoUrls":[]}`},
	{"findPetsByStatus", map[string]any{"status": "pending"}, "GET", "/pet/findByStatus?status=pending", ""},
	{"findPetsByTags", map[string]any{"tags": []string{"a b", "c"}}, "GET", "/pet/findByTags?tags=a+b&tags=c", ""},
	{"getPetById", map[string]any{"petId": 10}, "GET", "/pet/10", ""},
	{"updatePetWithForm", map[string]any{"petId": 10, "name": "rex", "status": "sold"}, "POST", "/pet/10?name=rex&status=sold", ""},
	{"deletePet", map[string]any{"petId": 10}, "DELETE", "/pet/10", ""},
	{"uploadFile", map[string]any{"petId": 10, "additionalMetadata": "front"}, "POST", "/pet/10/uploadImage?additionalMetadata=front", ""},
	{"getInventory", nil, "GET", "/store/inventory", ""},
	{"placeOrder", map[string]any{"body": map[string]any{"id": 5, "petId": 10, "quantity": 1, "status": "placed", "complete": false}}, "POST", "/store/order", `{"complete":false,"id":5,"petId":10,"quantity":1,"status":"placed"}`},
	{"getOrderById", map[string]any{"orderId": 5}, "GET", "/store/order/5", ""},
	{"deleteOrder", map[string]any{"orderId": 5}, "DELETE", "/store/order/5", ""},
	{"createUser", map[string]any{"body": map[string]any{"username": "ada", "email": "ada@example.com"}}, "POST", "/user", `{"email":"ada@example.com","username":"ada"}`},
	{"createUsersWithListInput", map[string]any{"body": []map[string]any{{"username": "ada"}, {"username": "bob"}}}, "POST", "/user/createWithList", `[{"username":"ada"},{"username":"bob"}]`},
	{"loginUser", map[string]any{"username": "ada", "password": "pw"}, "GET", "/user/login?password=pw&username=ada", ""},
	{"logoutUser", nil, "GET", "/user/logout", ""},
	{"getUserByName", map[string]any{"username": "ada"}, "GET", "/user/ada", ""},
	{"updateUser", map[string]any{"username": "ada", "body": map[string]any{"username": "ada", "phone": "555"}}, "PUT", "/user/ada", `{"phone":"555","username":"ada"}`},
	{"deleteUser", map[string]any{"username": "ada"}, "DELETE", "/user/ada", ""},
}

// TestGatewayOpenAPIPrism fronts a real server of a published
// description: Stoplight's Prism (5.16.0) mocking the Swagger Petstore 3
// description, which validates each request it gets (its parameters,
// body and credentials) and answers with the description's examples.
// vigil -upstream pets=openapi:FILE (the description, its server Prism's
// URL) with the operator's credentials as -upstream-header, and anon, the
// same without them, are called by the TypeScript SDK v2 client in both
// eras (2025-11-25 and 2026-07-28): every one of the 19 operations is
// listed and called through each, and each result is what Prism answers
// the same request sent directly: pets' the 2xx bodies as text and
// structured content, anon's Prism's 401 as a tool error with the
// status.
func TestGatewayOpenAPIPrism(t *testing.T) {
	node := openapiComponents(t)
	data, err := os.ReadFile("../../gateway/internal/openapi/testdata/petstore3.yaml")
	require.NoError(t, err)
	spec := filepath.Join(t.TempDir(), "petstore3.yaml")
	prismSpec := filepath.Join(t.TempDir(), "petstore3.yaml")
	require.NoError(t, os.WriteFile(prismSpec, data, 0o600))
	base := startPrism(t, node, prismSpec)
	data = bytes.Replace(data, []byte("url: https://petstore3.swagger.io/api/v3"), []byte("url: "+base), 1)
	require.NoError(t, os.WriteFile(spec, data, 0o600))

	svc := startService(t, "-http", "127.0.0.1:0",
		"-upstream", "pets=openapi:"+spec,
		"-upstream-header", "pets=api_key=special-key",
		"-upstream-header", "pets=Authorization=Bearer token-5c1e",
		"-upstream", "anon=openapi:"+spec)
	var want []string
	for _, c := range petstoreCalls {
		want = append(want, c.tool)
	}
	header := http.Header{"Api_key": {"special-key"}, "Authorization": {"Bearer token-5c1e"}}
	t.Run("pets", func(t *testing.T) {
		checkThroughVigil(t, node, svc.base+"/mcp", "pets_", base, header, want, petstoreCalls, nil)
	})
	t.Run("anon", func(t *testing.T) {
		runs := checkThroughVigil(t, node, svc.base+"/mcp", "anon_", base, nil, want, petstoreCalls, nil)
		for _, run := range runs {
			refused := 0
			for _, r := range run.results {
				if r.IsError && strings.HasPrefix(r.Content[0].Text, "HTTP 401 Unauthorized") {
					refused++
				}
			}
			// The 8 pet operations and getInventory need credentials.
			assert.Equal(t, 9, refused, "the calls of the operations that need credentials are Prism's 401")
		}
	})
	assert.NotContains(t, svc.logs.String(), "token-5c1e", "the operator's credentials are not logged")
	t.Run("docs", func(t *testing.T) { checkDocsExample(t, spec) })
}

// checkDocsExample runs the example of docs/gateway.md's "REST APIs
// (OpenAPI)": vigil with its flags and its catalog in front of Prism (the
// description at spec, its server Prism's URL, as the example's sed makes
// it), and its call, whose answer must be the one the
// page shows.
func checkDocsExample(t *testing.T, spec string) {
	page, err := os.ReadFile("../../docs/gateway.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(page), "\n## REST APIs (OpenAPI)\n")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	block := func(lang string) string {
		_, b, ok := strings.Cut(section, "```"+lang+"\n")
		require.True(t, ok, "no %s block", lang)
		b, _, _ = strings.Cut(b, "```")
		return b
	}
	example := block("sh")
	require.Contains(t, example, `-upstream 'pets=openapi:petstore3.yaml'`)
	require.Contains(t, example, `-upstream-header 'pets=api_key=special-key' -catalog catalog.yaml`)
	require.Contains(t, example, `"params":{"name":"pet","arguments":{"petId":10}`)
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte(block("yaml")), 0o600))
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "pets=openapi:"+spec,
		"-upstream-header", "pets=api_key=special-key", "-catalog", catalog)
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, svc.base+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pet","arguments":{"petId":10},"_meta":{`+meta+`}}}`))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "pet"} {
		req.Header.Set(k, v)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	t.Logf("the example's call answered: %s", got)
	assert.JSONEq(t, block("json"), string(got), "docs/gateway.md shows the answer")
}

// notesDescription is the OpenAPI 3.1 description of notesAPI; SERVER is
// replaced by its URL.
const notesDescription = `openapi: 3.1.0
info: {title: notes, version: "1"}
servers: [{url: "SERVER/v1"}]
components:
  schemas:
    Note:
      type: object
      required: [id, title]
      properties:
        id: {type: integer}
        title: {type: string}
        tags: {type: array, items: {type: string}}
        by: {type: [string, "null"]}
    NewNote:
      type: object
      required: [title]
      properties:
        title: {type: string}
        tags: {type: array, items: {type: string}}
    Problem:
      type: object
      properties: {error: {type: string}}
  responses:
    NotFound:
      description: no such note
      content: {application/json: {schema: {$ref: "#/components/schemas/Problem"}}}
paths:
  /notes:
    get:
      operationId: listNotes
      summary: List the notes
      parameters:
        - {name: tag, in: query, schema: {type: array, items: {type: string}}}
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 10}}
      responses:
        "200":
          description: the notes
          content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Note"}}}}
    post:
      operationId: createNote
      summary: Create a note
      parameters:
        - {name: X-Author, in: header, required: true, schema: {type: string}}
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/NewNote"}}}
      responses:
        "201":
          description: created
          content: {application/json: {schema: {$ref: "#/components/schemas/Note"}}}
        "422":
          description: refused
          content: {application/json: {schema: {$ref: "#/components/schemas/Problem"}}}
  /notes/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: integer}}
    get:
      operationId: getNote
      responses:
        "200":
          description: the note
          content: {application/json: {schema: {$ref: "#/components/schemas/Note"}}}
        "404": {$ref: "#/components/responses/NotFound"}
    delete:
      operationId: deleteNote
      responses:
        "204": {description: deleted}
        "404": {$ref: "#/components/responses/NotFound"}
  /notes/{id}/text:
    get:
      operationId: noteText
      summary: The note as plain text
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: its text
          content: {text/plain: {schema: {type: string}}}
`

// notesAPI is the project's own REST API: its answers depend on the
// request only (so that a request sent twice is answered alike), and it
// records each request it gets but the test's direct ones, as "METHOD
// target author body".
func notesAPI(got func(string)) http.Handler {
	mux := http.NewServeMux()
	note := func(id string) string { return `{"id":` + id + `,"title":"note ` + id + `","tags":["t"],"by":null}` }
	problem := func(w http.ResponseWriter, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"error":"`+msg+`"}`)
	}
	found := func(w http.ResponseWriter, id string) bool {
		n, err := strconv.Atoi(id)
		if err != nil || n < 1 || n > 100 {
			problem(w, http.StatusNotFound, "no note "+id)
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/notes", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var notes []string
		for i := 1; i <= max(limit, 1); i++ {
			notes = append(notes, note(strconv.Itoa(i)))
		}
		_, _ = io.WriteString(w, "["+strings.Join(notes, ",")+"]\n")
	})
	mux.HandleFunc("POST /v1/notes", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Title string   `json:"title"`
			Tags  []string `json:"tags"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Header.Get("Content-Type") != "application/json" {
			problem(w, http.StatusBadRequest, "not a JSON note")
			return
		}
		if strings.TrimSpace(in.Title) == "" {
			problem(w, http.StatusUnprocessableEntity, "the title is empty")
			return
		}
		out, _ := json.Marshal(map[string]any{"id": 101, "title": in.Title, "tags": in.Tags, "by": r.Header.Get("X-Author")})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(out)
	})
	mux.HandleFunc("GET /v1/notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if found(w, r.PathValue("id")) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, note(r.PathValue("id")))
		}
	})
	mux.HandleFunc("DELETE /v1/notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if found(w, r.PathValue("id")) {
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("GET /v1/notes/{id}/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "note "+r.PathValue("id")+"\nline two\n")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.UserAgent() != directAgent {
			got(r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("X-Author") + " " + string(body))
		}
		mux.ServeHTTP(w, r)
	})
}

// notesCalls call each of notesAPI's operations, with the answers it
// gives: 200, 201, 204, 404, 422 and a text/plain 200.
var notesCalls = []restCall{
	{"listNotes", map[string]any{"tag": []string{"a", "b c"}, "limit": 2}, "GET", "/notes?limit=2&tag=a&tag=b+c", ""},
	{"listNotes", nil, "GET", "/notes", ""},
	{"createNote", map[string]any{"X-Author": "ada", "body": map[string]any{"title": "groceries", "tags": []string{"home"}}}, "POST", "/notes", `{"tags":["home"],"title":"groceries"}`},
	{"createNote", map[string]any{"X-Author": "ada", "body": map[string]any{"title": "  "}}, "POST", "/notes", `{"title":"  "}`},
	{"getNote", map[string]any{"id": 7}, "GET", "/notes/7", ""},
	{"getNote", map[string]any{"id": 404}, "GET", "/notes/404", ""},
	{"deleteNote", map[string]any{"id": 7}, "DELETE", "/notes/7", ""},
	{"deleteNote", map[string]any{"id": 0}, "DELETE", "/notes/0", ""},
	{"noteText", map[string]any{"id": "a/../b?c"}, "GET", "/notes/a%2F..%2Fb%3Fc/text", ""},
}

// TestGatewayOpenAPIOwnServer fronts the project's own REST API (notesAPI,
// an OpenAPI 3.1 description: path, query and header parameters, a JSON
// body, 201, 204, 404 and 422 answers and a text/plain one) with the
// vigil binary, and calls every operation with the TypeScript SDK v2
// client in both eras: the API gets exactly the requests the calls mean
// (a path value with "/", ".." and "?" inside its segment), and each
// result is exactly what it answers: a 201's JSON as text and structured
// content, an array wrapped as "result", a 204 as empty text, a 404 and
// a 422 as tool errors with the status and the API's body, plain text as
// text.
func TestGatewayOpenAPIOwnServer(t *testing.T) {
	node := openapiComponents(t)
	var mu sync.Mutex
	var got []string
	api := httptest.NewServer(notesAPI(func(r string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
	}))
	defer api.Close()
	spec := filepath.Join(t.TempDir(), "notes.yaml")
	require.NoError(t, os.WriteFile(spec, []byte(strings.Replace(notesDescription, "SERVER", api.URL, 1)), 0o600))
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "notes=openapi:"+spec)

	var sent []string
	for _, c := range notesCalls {
		author := ""
		if a, ok := c.args["X-Author"].(string); ok {
			author = a
		}
		sent = append(sent, c.method+" /v1"+c.target+" "+author+" "+c.body)
	}
	afterClient := func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, sent, got, "the API got exactly the calls' requests, through vigil")
		got = nil
	}
	want := []string{"listNotes", "createNote", "getNote", "deleteNote", "noteText"}
	runs := checkThroughVigil(t, node, svc.base+"/mcp", "", api.URL+"/v1", nil, want, notesCalls, afterClient)
	exact := []struct {
		text       string
		structured string
		isError    bool
	}{
		{`[{"id":1,"title":"note 1","tags":["t"],"by":null},{"id":2,"title":"note 2","tags":["t"],"by":null}]` + "\n", `{"result":[{"id":1,"title":"note 1","tags":["t"],"by":null},{"id":2,"title":"note 2","tags":["t"],"by":null}]}`, false},
		{`[{"id":1,"title":"note 1","tags":["t"],"by":null}]` + "\n", `{"result":[{"id":1,"title":"note 1","tags":["t"],"by":null}]}`, false},
		{`{"by":"ada","id":101,"tags":["home"],"title":"groceries"}`, `{"by":"ada","id":101,"tags":["home"],"title":"groceries"}`, false},
		{`HTTP 422 Unprocessable Entity: {"error":"the title is empty"}`, "", true},
		{`{"id":7,"title":"note 7","tags":["t"],"by":null}`, `{"id":7,"title":"note 7","tags":["t"],"by":null}`, false},
		{`HTTP 404 Not Found: {"error":"no note 404"}`, "", true},
		{"", "", false},
		{`HTTP 404 Not Found: {"error":"no note 0"}`, "", true},
		{"note a/../b?c\nline two\n", "", false},
	}
	require.Len(t, runs, len(eras))
	for _, run := range runs {
		for i, w := range exact {
			r := run.results[i]
			assert.Equal(t, w.text, r.Content[0].Text, "call %d (%s)", i, notesCalls[i].tool)
			assert.Equal(t, w.isError, r.IsError, "call %d (%s)", i, notesCalls[i].tool)
			if w.structured == "" {
				assert.Empty(t, r.StructuredContent, "call %d", i)
			} else {
				assert.JSONEq(t, w.structured, string(r.StructuredContent), "call %d", i)
			}
		}
	}
}
