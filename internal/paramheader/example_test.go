package paramheader_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/vigil-mcp/vigil/internal/paramheader"
)

func ExampleCheck() {
	schema := json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"note":{"type":"string","x-mcp-header":"Note"},
		"text":{"type":"string"}}}`)
	mirrors := paramheader.Mirrors(schema) // once per tool
	for _, m := range mirrors {
		fmt.Println(m.Arg, "is mirrored by", m.Header)
	}

	h := http.Header{}
	h.Set("Mcp-Param-Region", "eu-west-1")
	h.Set("Mcp-Param-Note", "=?base64?w6l0w6k=?=") // "été", base64-encoded
	fmt.Printf("%q\n", paramheader.Check(h, mirrors, json.RawMessage(`{"region":"eu-west-1","note":"été","text":"hi"}`)))
	fmt.Printf("%q\n", paramheader.Check(h, mirrors, json.RawMessage(`{"region":"us-east-1","note":"été"}`)))
	h.Del("Mcp-Param-Note")
	fmt.Printf("%q\n", paramheader.Check(h, mirrors, json.RawMessage(`{"region":"eu-west-1","note":"été"}`)))
	// Output:
	// note is mirrored by Mcp-Param-Note
	// region is mirrored by Mcp-Param-Region
	// ""
	// "Mcp-Param-Region header does not match argument \"region\""
	// "missing Mcp-Param-Note header for argument \"note\""
}
