package capability_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/a2awebcap/a2awebcap/agent/capability"
)

// An instance starts with the loader only; the model asks to install the file system, the
// user approves its contract, and calls inside it run while a call outside it is refused.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "notes"), 0o755)

	fs, _ := capability.FileSystem(dir, capability.Contract{Reads: []string{"file:*"}, Writes: []string{"file:notes/*"}}, nil)
	catalog := capability.NewCatalog()
	offer := capability.Offering(fs, capability.Strategies{Minimum: capability.AuditOnly, Recommended: capability.ContractBased})
	if err := catalog.Add(offer); err != nil {
		fmt.Println(err)
	}
	set := capability.NewSet(&capability.SetOptions{Principal: "alice", Catalog: catalog})
	defer set.Close()

	model := capability.Origin{Kind: capability.OriginModel}
	install := capability.Request{Capability: "loader", Method: "install", Args: json.RawMessage(`{"name":"fs"}`), Origin: model}
	_, err := set.Call(ctx, install)
	var ar *capability.ApprovalRequired
	if errors.As(err, &ar) {
		fmt.Println(ar.Pending.Prompt())
		_ = set.Decide(ctx, ar.Pending.ID, capability.Decision{Approve: true, By: "alice"})
		install.Approval = ar.Pending.ID
		_, err = set.Call(ctx, install)
	}
	fmt.Println("installed:", err == nil)

	write := capability.Request{Capability: "fs", Method: "write", Args: json.RawMessage(`{"path":"notes/todo.txt","content":"buy milk"}`), Origin: model}
	out, err := set.Call(ctx, write)
	fmt.Println(string(out), err)
	write.Args = json.RawMessage(`{"path":"todo.txt","content":"buy milk"}`)
	_, err = set.Call(ctx, write)
	fmt.Println(err)
	// Output:
	// The agent (model) wants to install the capability fs under the strategy contract. Its contract allows: reads file:*; writes file:notes/*. Approve p1? Answer yes or no.
	// installed: true
	// {"bytes":8,"path":"notes/todo.txt"} <nil>
	// capability: outside the contract: writes file:todo.txt
}

// Derive narrows a capability; revoking it stops every holder of it and of what was derived
// from it.
func ExampleCapability_Derive() {
	ctx := context.Background()
	clock := capability.Clock(func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) })
	set := capability.NewSet(nil)
	defer set.Close()
	mine, _ := clock.Derive(capability.Restrictions{ReadOnly: true})
	_ = set.Install(ctx, mine, capability.Grant{Strategy: capability.Strategy{Kind: capability.PreApproved}})
	out, _ := set.Call(ctx, capability.Request{Capability: "clock", Method: "now"})
	fmt.Println(string(out))
	clock.Revoke(errors.New("the clock is gone"))
	_, err := set.Call(ctx, capability.Request{Capability: "clock", Method: "now"})
	fmt.Println(err)
	// Output:
	// {"time":"2026-05-01T12:00:00Z","unix":1777636800}
	// capability: revoked: clock: the clock is gone
}
