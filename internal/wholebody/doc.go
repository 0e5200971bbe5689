// Package wholebody hands a request body that a handler in front of
// Vigil's Streamable HTTP endpoint has read already to the endpoint as it
// is: the authorization guard of middleware/auth reads a body to look at
// the tools it calls, and wraps the bytes in a [Body], which the endpoint
// takes without reading and copying them again. It is a leaf: it imports
// nothing of Vigil.
package wholebody
