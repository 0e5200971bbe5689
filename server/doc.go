// Package server is Vigil's MCP session core: a [Server] that serves each
// client connection ([transport.Conn]) as a [Session], runs every request
// through a middleware chain ([Handler], [Middleware], [WithMiddleware]) on its own
// goroutine, and guarantees what MCP servers routinely get wrong when clients
// vanish:
//
//   - When the transport closes, every in-flight handler is cancelled (not
//     waited for), with a cause read by [context.Cause]: [ErrTransportClose],
//     [ErrStreamClose], [ErrClientCancel], [ErrShutdown] or
//     [ErrHandlerTimeout]. The first cause wins. A request's stream closing
//     cancels it at once with a provisional cause, which settles within
//     [StreamCloseGrace] into what the client did; [CancelReasonOf] waits
//     for the final one, the one recorded. initialize is never cancelled.
//   - Every request ends in exactly one outcome: a response written, or no
//     response with a [protocol.DropReason] ([Outcome], which every
//     [Observer] hears of through RequestEnded). A cancelled request is
//     never answered, and a cancel racing the handler's return never
//     yields two answers for one id.
//   - Writes that fail because this side closed ([transport.ErrClosed]) or
//     the peer vanished ([transport.ErrPeerGone]) are tolerated, classified
//     and reported, never logged as errors and never a panic.
//   - Server-to-client requests ([Session.Call], [ListRoots]) waiting
//     when the session ends fail with [ErrConnectionClosed] from a snapshot
//     of the pending table.
//
// What the core sees and middleware cannot (sessions, drops, write failures,
// panics, refusals with their typed [protocol.RejectReason]) goes to an
// [Observer]. The package imports no telemetry library; the middleware and
// telemetry packages build on it. Codes, versions and reasons come from the
// leaf package transport/protocol.
//
// Each request's protocol era is chosen once, when it is admitted: a 2025
// session, whose client calls ([Elicit], [CreateMessage], [ListRoots],
// [CallClient]) are requests on the session, or a 2026-07-28 stateless
// request, whose client calls become an input_required result. Asking the client, task ownership and
// views, and result decoration go through it; [Request.InSession] tells
// middleware which it is.
//
// To test a server of your own, use the client of package server/mcptest.
//
// Start with [New], [Server.AddTool] and [Server.Serve], and the examples.
//
// # Input validation
//
// Every tool's arguments are validated against its input schema before its
// handler runs, whichever way the tool was registered and however it is
// called (a 2025 session, a 2026-07-28 request, a task): arguments that do
// not match are answered with a result with IsError set whose text (at most
// 512 bytes) names the failing keyword and schema location, and the handler
// is not called; [Outcome.InvalidArguments] tells such a result from the
// tool's own errors. Each schema is compiled once, at registration. Most
// schemas (objects whose members have simple types, bounds, lengths, string
// enums) are checked by a scan of the arguments' bytes, without decoding
// or allocating; the others by [jsonschema.Resolved.Validate].
//
// # Typed tools
//
// [AddTypedTool] infers what [Server.AddTool] takes by hand.
//
// Input: unless t.InputSchema is set, the input schema is inferred from In
// with [jsonschema.For]: In must be a struct or a map with string keys (or
// a pointer to one); use struct{} for a tool without arguments. Struct
// fields are required unless tagged omitempty or omitzero, a `jsonschema`
// tag gives a field's description, and properties the struct lacks are
// refused. For constraints inference cannot express (enums, patterns,
// bounds), set t.InputSchema, an object schema; In may then also be an
// interface such as any (decoded as by [encoding/json]). Before the handler
// runs, the arguments are validated against the schema, then decoded into
// In; arguments that fail either step are answered with a result with
// IsError set whose text names the problem, as MCP asks, and the handler
// is not called.
//
// Output, by Out's type:
//   - a struct, or a pointer to one: the output schema is inferred from it
//     (or taken from t.OutputSchema) and declared; the returned value,
//     encoded, is the result's structuredContent and, as MCP recommends,
//     also its one text content item. A value that does not conform to the
//     schema (a nil pointer, a nil map in a field without omitempty, ...)
//     is a bug in the server: it is logged, with the cause, on the server's
//     logger, and the client gets a [protocol.CodeInternal] error.
//   - *[CallToolResult]: the handler makes the result itself. If
//     t.OutputSchema is set, the StructuredContent of a result without
//     IsError is validated against it as above.
//   - string: the result is one text item holding the string.
//   - anything else (any, maps, slices, numbers, ...): the result is one
//     text item holding the value encoded as JSON, without structured
//     content; t.OutputSchema must not be set.
//
// t's other fields (title, description, icons, annotations, execution,
// _meta) are listed as given.
//
// # Tasks
//
// A task is a tools/call that runs in the background. The client gets a
// task id at once, polls tasks/get for the task's status and, once the
// task is done, gets its result. Two wire formats share one engine:
//
//   - MCP 2025-11-25 tasks ("v1"), in an initialized session. The client
//     asks for a task with params.task ({ttl?}) and gets {task: Task}; it
//     reads the result with tasks/result, which blocks until the task is
//     done, and has tasks/list and tasks/cancel. The session is told of
//     status changes (notifications/tasks/status). Tasks belong to their
//     session: no other session sees them, and they are cancelled, with
//     the session's cause, when it ends.
//   - The 2026-07-28 tasks extension ("v2", [ExtensionTasks]), for
//     stateless requests. Task creation is server-directed: a client that
//     declares the extension in a request's _meta
//     clientCapabilities.extensions gets a task for every call of a tool
//     with task support; tasks/get returns the status with the result, the
//     error or the pending input requests inline; tasks/update answers
//     those; tasks/cancel acknowledges. The tasks belong to no session,
//     since each stateless request may come on a connection of its own;
//     their ids are 128 random bits.
//
// A tool opts in with [Tool].Execution.TaskSupport: [TaskSupportOptional]
// or [TaskSupportRequired] ([TaskSupportForbidden], the default, never
// runs as a task). The server declares the tasks capability (2025) or the
// extension (2026-07-28 server/discover) once such a tool is registered.
//
// The core starts the task before the handler runs, and the handler runs
// with the task's context: it outlives the request, is cancelled with
// [ErrClientCancel] by tasks/cancel, with [ErrShutdown] when the server
// closes and with [ErrTaskExpired] when the task's TTL runs out, and it
// is not subject to the request's middleware nor to [WithTimeout] (which
// bounds the tools/call that created the task, not the task). A handler that must
// first ask the client for input synchronously, by 2026-07-28
// input_required rounds, sets [ToolExecution].Deferred and calls
// [RunAsTask] once it is ready to continue in the background:
//
//	func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
//		answer, err := server.Elicit(server.ContextWithInputKey(ctx, "user_name"), ask)
//		if err != nil {
//			return nil, err // the input_required round, or a failure
//		}
//		return server.RunAsTask(ctx, func(ctx context.Context) (*server.CallToolResult, error) {
//			return work(ctx, answer) // in the background, with the task's context
//		})
//	}
//
// Input inside a task goes through [CallClient] (and so [Elicit],
// [CreateMessage] and [ListRoots]) as anywhere else. In a 2025 task it is
// a server-to-client request on the session, tagged with the related-task
// _meta and sent on the stream of a waiting tasks/result when there is one;
// the task is input_required while the client has not answered. In a
// 2026-07-28 task the call blocks: the task becomes input_required and
// lists the question in tasks/get under a key (see [ContextWithInputKey])
// until tasks/update brings the answer. Several questions asked
// concurrently are several keys.
//
// # MCP Apps
//
// The MCP Apps extension ([ExtensionUI], SEP-1865) lets a tool name an
// HTML view the client renders in a sandboxed iframe. [Server.AddView]
// serves the page as a ui:// resource with MIME type [ViewMIMEType] and
// its [ViewUI] as _meta.ui (CSP domain allowlists, sandbox permissions, a
// dedicated domain, a border preference), checked when it is registered;
// the server then declares the extension, in initialize and in
// server/discover. [Tool].UI links a tool to a registered view.
//
// The fallback follows what each request's client declared: the
// capabilities of initialize in a 2025 session, the request's own in a
// 2026-07-28 stateless request ([ClientCapabilities.SupportsUI]: the
// extension with [ViewMIMEType] among its mimeTypes). A client that
// declared it sees _meta.ui (resourceUri, visibility) on the tool, and the
// deprecated _meta["ui/resourceUri"] that older hosts read. Any
// other client sees the tool as a plain tool, without _meta.ui, unless
// [ToolUI].RequireUI is set or its visibility leaves out "model" (a tool
// only the view calls): then tools/list leaves it out and tools/call
// answers as for an unknown tool. Since a view's tool must answer
// meaningfully without the view, a successful result of such a tool with
// structured content and no content gets the structured content's JSON as
// text; a handler may also shape its text by SupportsUI. The host-to-view
// ui/* protocol is the client's business, not the server's.
// # Skills
//
// The skills extension ([ExtensionSkills], SEP-2640) serves Agent Skills:
// a directory holding a SKILL.md, whose YAML frontmatter has at least a
// name and a description, and supporting files. [Server.AddSkill]
// registers one skill ([Skill]) from an [io/fs.FS] or, dynamic, from a
// function; [Server.AddSkills] registers every directory of an FS that
// holds a SKILL.md, at its path in the FS, nested ones too. Registration
// applies the Agent Skills rules (the name: 1 to 64 lowercase letters,
// digits and hyphens, equal to the path's last segment; the description:
// 1 to 1024 characters; compatibility, license, allowed-tools and
// metadata typed as specified; other fields pass through) and the
// extension's limits (512 files and 16 MiB per skill), and reads each
// file once: its digest and size are computed then, and its read's result
// is encoded then, for each protocol era, so reads serve the same bytes
// (they always match the entry) without encoding them again, and are not
// bounded by [WithMaxResultBytes] (a dynamic skill's files are).
//
// Each file is the resource skill://<path>/<file> (its MIME type from its
// extension; text when it is UTF-8 of a textual type, else a blob), read
// by resources/read; resources/list shows each listed skill's SKILL.md
// (named and described by its frontmatter), as the reference server does,
// and no skill of [Skill].Unlisted. skills/list
// pages through the listed skills' entries (the frontmatter as JSON, the
// complete manifest of files with sha256 digests and sizes, or "dynamic");
// skills/get answers for every skill served, listed or not, and -32602
// for a URI that names no skill's SKILL.md; resources/directory/read lists
// the direct children of a skill's directory, or of a prefix leading to a
// listed skill, and is -32602 for anything else. The server declares the
// extension, with directoryRead, and the resources capability, once a skill
// is registered, in both protocol eras; the three methods' results carry
// resultType, ttlMs and cacheScope in both. A change to the skills is a
// change to the resource list: notifications/resources/list_changed (the
// extension defines no notification of its own).
//
// # Deadlines
//
// A request's deadline ([Request.SetDeadline]) is its context's own: the
// server runs every request's deadline from one timer, armed for the
// earliest of them, with no context, timer or goroutine per request. The
// deadlines wait in a list in deadline order, linked through the requests
// themselves, rather than in a heap: with one timeout for every request
// ([WithTimeout]), each new deadline is the latest and goes at the
// tail at once, and a request leaves from wherever it is, also at once, so
// the timer fires about once per timeout, finding the requests it was
// armed for long gone. (A deadline earlier than the tail's, from a shorter
// timeout for some requests, walks back from the tail to its place.) Both
// ends are a few lines of code run by every request, where a heap's sift
// ran container/heap's, through an interface, on every request's way in
// and out.
package server
