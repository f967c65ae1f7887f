// Package factory lets an agent write capabilities of its own, in Starlark, and keep them as
// plain files (docs/capabilities.md, "The factory").
//
// [Offer] is the factory as a capability the operator offers ("factory"): create stages a
// draft (a manifest, capability.star and test.star, checked by sandbox.Compile), test runs its
// tests in the sandbox, install makes it callable in the instance's capability set (its
// contract approved by the user at its first call, unless the user installed it), commit writes
// it to the instance's directory, DIR/<principal>/capabilities/<name>/. [Rehydrate] installs
// what is committed there when an instance loads (agent.Definition.Rehydrate): the running
// agent is primary, the files are its serialization, diffable and reviewable with git.
//
//	f := &factory.Options{Dir: "/var/lib/a2awebcap/agents", Pool: pool, Catalog: catalog}
//	catalog.Add(factory.Offer(f))
//	def := &agent.Definition{Name: "a", Capabilities: catalog, Rehydrate: f.Rehydrate}
package factory
