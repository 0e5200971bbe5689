// Package vocab is the part of the protocol vocabulary that only Vigil's
// own packages use: the _meta keys the server and the HTTP transport read
// and write, the methods each era calls, and the rule of a tool's name.
// Like every package under internal/, it imports nothing of the module;
// the public vocabulary (versions, codes, reasons) is transport/protocol.
package vocab
