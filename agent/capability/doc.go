// Package capability gives agents their powers, deny by default: a capability is a runtime
// object an agent instance holds — a file system confined to a directory, HTTP fetch to
// allowed URLs, the clock, a view of itself, a capability a client lent it — with a contract
// that bounds what its calls may reach, attenuation by Derive, and revocation. An instance
// holds capabilities in a Set, each under a permission strategy its principal chose; a new Set
// holds only the loader, through which the rest are listed, shown and installed.
//
// # Capabilities
//
// [New] makes a [Capability] of a [Spec] (name, description, methods with JSON Schemas of
// their parameters and results, [Contract]) and an [Impl]. Its [Capability.Describe] is what a
// language model is told (the tool schemas are the parameter schemas); every call is checked
// against those schemas and, effect by effect ([Call.Check]), against the contract of the
// capability and of every capability it was derived from. [Capability.Derive] narrows one
// (fewer methods, a narrower contract, read-only) and never widens it;
// [Capability.Revoke] makes every call fail with [ErrRevoked] at once, in every holder,
// derived capabilities included.
//
// # Sets and strategies
//
// A [Set] is one holder's: [Set.Install] holds a capability (a copy derived for that holder)
// under a [Strategy] — [PreApproved], [AuditOnly], [ContractBased], [BudgetBased] or
// [CallByCall]. [Set.Call] runs a call under it. A call that needs the user's decision returns
// an [*ApprovalRequired] at once, carrying a [Pending]; the runtime asks the user (an A2A
// input-required round trip), records the answer with [Set.Decide] and makes the same request
// again with Request.Approval set. Refusals, decisions, installs and, under AuditOnly, every
// call go to the [Audit] log and to SetOptions.Observe, which the runtime turns into
// observations with provenance.
//
// # The loader, the catalog and packages
//
// A [Catalog] holds what the operator offers ([Offer]: a [Manifest], a default strategy, and
// how to make the capability for one holder). The loader lists it, shows a contract, installs
// (asking the user unless they asked themselves or the operator pre-approved it), uninstalls
// and lists what is installed. Built-ins: [FileSystem], [Fetch], [Clock], [SelfView]. A
// package on disk ([ReadPackage]) is a manifest, source and tests signed by a detached JWS
// ([SignPackage]) that the loader verifies against trusted keys; [PackageOptions].Check is the
// hook where the sandbox refuses code that reaches beyond its contract.
//
//	set := capability.NewSet(&capability.SetOptions{Principal: "alice", Catalog: catalog})
//	_, err := set.Call(ctx, capability.Request{Capability: "loader", Method: "install",
//		Args: json.RawMessage(`{"name":"clock"}`), Origin: capability.Origin{Kind: capability.OriginUser}})
//	now, err := set.Call(ctx, capability.Request{Capability: "clock", Method: "now"})
//
// docs/capabilities.md describes the model as users see it.
package capability
