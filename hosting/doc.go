// Package hosting serves several agents of the runtime from one server (docs/multi-agent.md):
// it reads their definitions — one JSON object per agent: rules, knowledge, tools, capabilities,
// model and card fields — refuses two that would be indiscernible, derives each card's skills
// from what the agent can do, and runs them all on one engine with each agent's tasks kept
// apart.
//
//	defs, err := hosting.ReadDefinitions("agents/")
//	agents, err := hosting.New(defs, &hosting.Options{Store: agentStore})
//	defer agents.Close()
//	eng := engine.New(agents.Executor(), taskStore, nil)
//	h := binding.NewAgentsHandler(agents.Hosted(eng, nil), nil) // /agents/{name}/…
//	g := binding.NewAgentsGRPCServer(agents.Hosted(eng, nil), nil)
package hosting
