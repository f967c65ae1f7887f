// Package registry is an agent registry: principals register agents by the URL of their card;
// the registry fetches each card itself (through the SSRF guard), verifies signed ones, keeps
// checking that every agent answers (marking, never dropping, those that do not), and lets
// anyone search by skill, tag or name over HTTP with JSON and over capnweb. See
// docs/multi-agent.md.
//
// A registration belongs to the principal that made it; several principals may register one
// agent, which is listed once, and each removes only their own registration. What is listed is
// only ever what the agent itself serves.
//
//	st, _ := registry.OpenSQLite(ctx, "a2awebcap.db")
//	reg := registry.New(st, nil) // its checker runs until Close
//	http.Handle("/registry/", reg.Handler(&registry.HandlerOptions{Guard: binding.NewServiceGuard(opts)}))
//
//	c := registry.NewClient("https://registry.example", nil)
//	page, err := c.Search(ctx, registry.Query{Skill: "research"})
package registry
