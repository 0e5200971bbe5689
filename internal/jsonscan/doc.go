// Package jsonscan reads and writes JSON a byte slice at a time, without
// decoding into values: the scanners of Vigil's codec (transport) and of
// the layers that look into a message's raw members (server, middleware,
// cmd/vigil). It is a leaf: it imports nothing of Vigil.
//
// [Valid] is json.Valid's grammar, checked in one pass that reads strings
// and skips values eight bytes at a time; [ValidTaking] is the same pass
// handing a [Taker] the members of the top-level object and of objects
// nested in it along a path of member names, which is how the codec splits
// a JSON-RPC message, its params and its params._meta while it checks the
// frame. [EachMember], [SplitObject] and [SplitObjectInto] read the
// members of an object already known to be valid, without allocating;
// [DecodeString], [AppendString] and [StringSize] handle JSON strings;
// [OneLine] puts a message on one line for a transport whose frame is one.
//
// Member names are matched exactly (JSON-RPC is case-sensitive); a name
// written with escapes is decoded first. Of a repeated member, the last one
// wins where one value is kept, as with encoding/json.
package jsonscan
