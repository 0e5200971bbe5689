// Package wholebody reads request bodies whole for Vigil's Streamable HTTP
// endpoint, each in one buffer. [ReadDeclared] reads a body of declared
// length into one buffer of that length, without trusting the length
// before the bytes arrive. A [Body] hands a body that a handler in front
// of the endpoint has read already to the endpoint as it is: the
// authorization guard of middleware/auth reads a body to look at the
// tools it calls, and wraps the bytes in a Body, which the endpoint takes
// without reading and copying them again. It is a leaf: it imports
// nothing of Vigil.
package wholebody
