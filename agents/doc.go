// Package agents holds the agents a2aWebCap ships: implementations of a2a-go's
// a2asrv.AgentExecutor that any A2A server built on that interface can run (a2aWebCap's engine,
// or a2a-go's own default handler).
//
//   - [Builtin] is the agent `a2awebcap serve` runs by default: a small, honest utility agent
//     that needs no language model.
//   - [Conformance] plays the scenarios of the A2A conformance kit (a2aproject/a2a-tck, branch
//     1.0-dev), so the kit can be run against a server; see conformance/README.md.
//   - [Card] builds a minimal A2A 1.0 agent card for either, from its Skills.
//
// # The built-in agent
//
// Builtin reads the text of the user's message (its text parts, joined by newlines); the first
// word, in any case, is the command:
//
//	help               lists the commands (also "?", "hi", "hello", and an empty message)
//	echo TEXT          replies TEXT, as sent
//	time               the current time in UTC, as text and as a data part {"utc", "unix"}
//	count [words] TEXT the number of words, characters and lines of TEXT, as text and as a data
//	                   part {"words", "characters", "lines"}
//	wait [N]           a long-running task: N seconds (1 to 60, default 5; "5s" works too),
//	                   a "k/N seconds elapsed" working status update each second, then an
//	                   artifact "wait-result" and the completed state. It can be streamed,
//	                   subscribed to and canceled (it stops at the next tick).
//	ask                a task that asks "What should I call you?" and goes to input-required;
//	                   the next message sent to that task (same taskId) is the answer, and the
//	                   task completes with "Nice to meet you, NAME!" (a blank answer asks again)
//
// Anything else gets a reply naming the unknown command, followed by the help text.
//
// help, echo, time, count and the error replies are answered with a Message (no task is
// created); wait and ask create tasks. A follow-up message sent to an existing task that is not
// waiting for an answer is handled as a command, but answered by completing that task (A2A
// allows no Message once a task exists). Builtin reads only text: a part declaring a non-text
// media type (image/png, application/json, …) is refused with a2a.ErrUnsupportedContentType.
// Builtin.Now, Builtin.Tick and Builtin.MaxWait make its clock, its "wait" tick and its longest
// wait configurable (for tests); the zero value is ready to use.
//
// # The conformance agent
//
// The kit links each test to an agent behaviour through a prefix of the message ID it sends
// (tck_id("complete-task") is "tck-complete-task-<session>"). Conformance looks for a prefix,
// in order, in the message ID, in the message metadata value "scenario", and at the start of the
// first text part; the longest matching prefix wins (tck-artifact-file-url over
// tck-artifact-file). Every task-creating scenario starts with the submitted Task; on a
// follow-up to an existing task only the updates are sent.
//
//	prefix                        behaviour
//	tck-complete-task             completed, status message "Hello from TCK"
//	tck-artifact-text             artifact: text "Generated text content"; completed
//	tck-artifact-file             artifact: raw file part "tck", filename output.txt, text/plain; completed
//	tck-artifact-file-url         artifact: URL part https://example.com/output.txt, output.txt, text/plain; completed
//	tck-artifact-data             artifact: data part {"key": "value", "count": 42}; completed
//	tck-artifact-chunked (*)      working; one artifact "chunked" in 3 chunks "chunk-1 ", "chunk-2 ",
//	                              "chunk-3" (append on 2 and 3, lastChunk on 3); completed
//	tck-artifact-multiple (*)     two artifacts (text "First artifact", data {"index": 2}); completed
//	tck-message-response          a Message "Direct message response", no task (on a follow-up to a
//	                              task: that task completes with this message)
//	tck-input-required            input-required, no status message; a follow-up with the same prefix
//	                              keeps it there, any other follow-up resumes it (tck-complete-task
//	                              completes it, an unknown prefix completes it echoing the input)
//	tck-reject-task               rejected, status message "rejected" (the kit's reference SUTs throw
//	                              an error "rejected"; no kit test uses this prefix)
//	tck-stream-001                working, artifact "Stream hello from TCK", completed
//	tck-stream-002                completed
//	tck-stream-003                working, artifact "Stream task lifecycle", completed
//	tck-stream-ordering-001       working, artifact "Ordered output", completed
//	tck-stream-artifact-text      working, artifact "Streamed text content", completed
//	tck-stream-artifact-file      working, artifact with the raw file part output.txt, completed
//	tck-stream-artifact-chunked   working; one artifact in chunks "chunk-1 ", then "chunk-2" (append,
//	                              lastChunk); completed
//	test-resubscribe-message-id   working; stays working LongRunning (4 s, twice the kit's 2 s
//	                              streaming timeout); completed
//	anything else                 completed; the status message echoes the input's parts
//
// (*) not in the kit: added to exercise chunked and multiple artifacts without streaming.
// The tck-stream-* scenarios pause StepDelay (50 ms) before each event after the Task, so a
// stream visibly unfolds; the same events come over a blocking send. Cancel moves the task to
// canceled. Conformance checks no media types: as the kit's scenario file says of
// CORE-SEND-003, refusing media types the card does not declare is the server framework's job
// (package binding does it, from the card's input modes).
package agents
