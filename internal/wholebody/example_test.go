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

func ExampleReadDeclared() {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	body, err := wholebody.ReadDeclared(r.Body, r.ContentLength) // one buffer of the declared length
	fmt.Println(len(body), cap(body), err)

	short := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc"`))
	_, err = wholebody.ReadDeclared(short.Body, 100) // declares more than it sends
	fmt.Println(err)
	// Output:
	// 40 40 <nil>
	// unexpected EOF
}
