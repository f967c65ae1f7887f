package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/sandbox"
)

// The same method three ways, in one run: a direct Go call, a Go capability through a set's
// permission check, and a Starlark capability in a warm worker through the same set. And what
// a cold worker costs, which is why the pool keeps warm ones.
//
//	go test -run '^$' -bench . -benchmem ./agent/sandbox

const greetSource = `def greet(name):
    return "Hello, %s." % name.strip().title()
`

// greetGo is greet in Go: Starlark's title() upper-cases each word's first letter.
func greetGo(name string) string {
	words := strings.Fields(name)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + strings.ToLower(w[1:])
	}
	return "Hello, " + strings.Join(words, " ") + "."
}

var greetMethod = capability.Method{Name: "greet", Description: "greet someone",
	Params: capability.Object("", map[string]*capability.Schema{"name": capability.String("")}, "name"),
	Result: capability.String("")}

func BenchmarkGreet(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"name":"ada lovelace"}`)
	b.Run("direct-go", func(b *testing.B) {
		var s string
		for b.Loop() {
			s = greetGo("ada lovelace")
		}
		_ = s
	})
	set := capability.NewSet(&capability.SetOptions{Principal: "bench"})
	defer set.Close()
	goCap, err := capability.New(capability.Description{Name: "greet-go", Methods: []capability.Method{greetMethod}},
		capability.Funcs{"greet": func(_ context.Context, c *capability.Call) (any, error) {
			var a struct{ Name string }
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			return greetGo(a.Name), nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	pre := capability.Grant{Strategy: capability.Strategy{Kind: capability.PreApproved}, Approved: true}
	if err := set.Install(ctx, goCap, pre); err != nil {
		b.Fatal(err)
	}
	b.Run("go-capability", func(b *testing.B) {
		for b.Loop() {
			if _, err := set.Call(ctx, capability.Request{Capability: "greet-go", Method: "greet", Args: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	pool := sandbox.New(&sandbox.Options{Workers: 1})
	defer pool.Close()
	prog, err := sandbox.Compile(capability.Manifest{Name: "greet-star", Version: "1", Runtime: "starlark", Source: "capability.star",
		Methods: []capability.Method{greetMethod}, Strategy: capability.Strategies{Minimum: capability.PreApproved, Recommended: capability.PreApproved}},
		map[string][]byte{"capability.star": []byte(greetSource)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	starCap, err := pool.Capability(prog, set, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := set.Install(ctx, starCap, pre); err != nil {
		b.Fatal(err)
	}
	b.Run("starlark-capability", func(b *testing.B) {
		for b.Loop() {
			out, err := set.Call(ctx, capability.Request{Capability: "greet-star", Method: "greet", Args: args})
			if err != nil || string(out) != `"Hello, Ada Lovelace."` {
				b.Fatal(string(out), err)
			}
		}
	})
	cold := sandbox.New(&sandbox.Options{Workers: 1, Idle: -1})
	defer cold.Close()
	b.Run("starlark-cold-worker", func(b *testing.B) {
		for b.Loop() {
			if _, err := cold.Run(ctx, sandbox.Job{Files: prog.Files, Main: "capability.star", Function: "greet", Args: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ExamplePool_Run() {
	pool := sandbox.New(nil)
	defer pool.Close()
	res, err := pool.Run(context.Background(), sandbox.Job{
		Files:    map[string]string{"main.star": "def double(x):\n    return x * 2\n"},
		Main:     "main.star",
		Function: "double",
		Args:     json.RawMessage(`{"x": 21}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Value))
	// Output: 42
}
