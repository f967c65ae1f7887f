// Package engine is a2aWebCap's A2A 1.0 request handler: it implements a2a-go's
// a2asrv.RequestHandler, so a2a-go's bindings (JSON-RPC, REST, gRPC) and ours (capnweb) sit on
// it, and it runs any a2asrv.AgentExecutor unchanged.
//
// What it adds to the executor:
//
//   - Durable tasks: every event the executor yields is applied to the task and written, with
//     the event itself, in one store transaction (store.Store: SQLite by default, PostgreSQL,
//     memory). A restart loses nothing; tasks whose executor died are resumed if the executor
//     can resume them (Recoverer, ErrResume), settled with what it had committed, or marked
//     failed with a reason. The executor runs ahead of the store by a few events (4): those
//     it yields while a write is under way go to the store together in the next one (group
//     commit), so a fast executor pays one write per batch, not per event, and subscribers see
//     each event once it is stored.
//   - Streams and subscriptions that start with the Task (or carry a single Message) and then
//     carry only status and artifact updates, deliver the same events in the same order to
//     every subscriber, and close when the task reaches a terminal or interrupted state. A
//     subscriber that falls behind catches up from the log. A follow-up message moves an
//     interrupted task to working before its executor runs, so the stream it opens starts with
//     a task no longer interrupted; a Task the log holds past a stream's first event (that
//     resumption, or a Task an executor yields mid-run) is sent as a status update.
//   - Caller scoping: every task belongs to an owner (tenant and principal, from the call
//     context); other callers get TaskNotFound, never a hint that the task exists.
//   - Push notifications: the store enqueues a delivery per event and push config in the
//     transaction that writes the event; Options.Push (package push's Deliverer) checks config
//     URLs and is woken to send them.
//   - The 1.0 semantics of each operation: blocking sends by default and returnImmediately,
//     historyLength everywhere, resuming input-required tasks with a follow-up message, cancel,
//     ListTasks with every filter and cursor pagination. An executor that implements Waker
//     may also have a task it left input-required run again without a message (the agent
//     runtime's question that expired, or was decided another way).
//   - Input checked before anything runs: every identifier of a request (task, context,
//     message, reference and push config IDs, the tenant, the principal) must be UTF-8 without
//     NUL and at most MaxIDBytes long, else INVALID_PARAMS, on every store alike. A store
//     failure reaches the caller as INTERNAL_ERROR; the store's own text goes to the log.
//   - SendMessageFunc, a blocking send that holds no goroutine while the agent works: the
//     goroutine that settles the task calls back with the outcome (the capnweb binding uses it).
//   - Shutting down: Drain lets the running tasks finish (and starts no new one), Close stops
//     what still runs.
//   - Cluster mode (Options.Cluster, cluster.go, docs/cluster.md): several replicas on one
//     store. The replica that runs a task holds a lease on it, renewed while it runs; recovery
//     takes over only tasks whose lease expired, never a live peer's; Close hands the running
//     tasks over to the peers; streams follow tasks that other replicas run, through a Fanout
//     (package cluster: NATS JetStream) and the store.
//
// Use it with a store and an executor:
//
//	st, _ := sqlite.Open(ctx, "a2a.db", nil)
//	eng := engine.New(myExecutor, st, nil)
//	defer eng.Close(ctx)
//	http.Handle("/", binding.NewHTTPHandler(eng, card, nil))
package engine
