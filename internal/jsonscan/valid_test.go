package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `1e07`, `-12.5e+3`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `NaN`, `Infinity`,
	`{"a":1}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{"a" : [1, 2 , {"b":null}] }`, `{a:1}`, `{"a":1 "b":2}`,
	`[1,]`, `[,1]`, `[1 2]`, ` [ 1 , 2 ] `, `[[[]]]`, `[[[]]`, `]`, `}`, `{}}`, `{} {}`, `1 2`,
	`"\u00e9\n\t\"\\\/\b\f\r"`, `"\u12"`, `"\u12G4"`, `"\x"`, `"a` + "\x01" + `b"`, `"a` + "\x7f\x80\xff" + `b"`, `"unterminated`,
	"\t\n\r {\"k\":\"v\"} \r\n", "\v{}", "{}\x00",
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

// Valid agrees with json.Valid.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(validCases[len(validCases)-5])
	b.Run("vigil", func(b *testing.B) {
		for b.Loop() {
			Valid(msg)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(msg)
		}
	})
}
