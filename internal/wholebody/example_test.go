package wholebody_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/vigil-mcp/vigil/internal/wholebody"
)

func ExampleNew() {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	data, _ := io.ReadAll(r.Body) // a guard looks at the body...
	r.Body = wholebody.New(data, r.Body)

	// ...and the endpoint takes the bytes without reading them again.
	if b, ok := r.Body.(*wholebody.Body); ok {
		whole, unread := b.Unread()
		fmt.Println(unread, string(whole))
	}
	// Output:
	// true {"jsonrpc":"2.0","id":1,"method":"ping"}
}
