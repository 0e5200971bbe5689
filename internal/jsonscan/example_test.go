package jsonscan_test

import (
	"fmt"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

func ExampleSplitObjectInto() {
	params := []byte(`{"name":"echo","arguments":{"text":"hi"},"name":"shout"}`)
	var v [2][]byte // on the stack: nothing allocated
	if !jsonscan.Valid(params) || !jsonscan.SplitObjectInto(v[:], params, "name", "arguments") {
		return
	}
	name, _ := jsonscan.DecodeString(v[0])
	fmt.Printf("%s %s\n", name, v[1])
	// Output:
	// shout {"text":"hi"}
}

// printer is a Taker that prints what it is given.
type printer struct{}

func (printer) Object(level int) { fmt.Println("object at level", level) }

func (printer) Member(level int, key, val []byte) { fmt.Printf("  %d %s: %s\n", level, key, val) }

func ExampleValidTaking() {
	msg := []byte(`{"id":1,"params":{"name":"echo","_meta":{"k":"v"}},"m\u0065thod":"tools/call"}`)
	valid, taken := jsonscan.ValidTaking(msg, printer{}, "params", "_meta")
	fmt.Println(valid, taken)
	// Output:
	// object at level 0
	//   0 id: 1
	// object at level 1
	//   1 name: "echo"
	// object at level 2
	//   2 k: "v"
	//   1 _meta: {"k":"v"}
	//   0 params: {"name":"echo","_meta":{"k":"v"}}
	//   0 method: "tools/call"
	// true 3
}

func ExampleAppendString() {
	b := jsonscan.AppendString([]byte("text="), "say \"hi\"\n\xff")
	fmt.Println(string(b), len(b)-len("text=") == jsonscan.StringSize("say \"hi\"\n\xff"))
	// Output:
	// text="say \"hi\"\n\ufffd" true
}
