package benchkit_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
)

func ExamplePoster() {
	p := benchkit.NewPoster()
	benchkit.SetEchoHeaders(p.Header(), false, "session-1")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Header.Get("Mcp-Session-Id"), r.ContentLength)
		_, _ = w.Write([]byte(`{"content":[{"type":"text","text":"hello"}]}`))
	})
	w := p.Post(context.Background(), h, benchkit.AppendEchoCall(nil, 1, false))
	fmt.Println(w.Status(), string(w.Body()))
	// Output:
	// session-1 100
	// 200 {"content":[{"type":"text","text":"hello"}]}
}
