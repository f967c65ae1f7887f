package capnweb_test

import (
	"context"
	"fmt"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// Greeter is passed by reference: it embeds capnweb.Target.
type Greeter struct{ capnweb.Target }

func (Greeter) Greet(name string) string { return "Hello, " + name }

// User is what Login returns: another capability.
type User struct {
	capnweb.Target
	name string
}

func (u *User) Name() string { return u.name }

func (Greeter) Login(name string) *User { return &User{name: name} }

// Two sessions joined by an in-memory pipe; over a WebSocket (Dial, NewHandler) it is the same.
func Example() {
	ctx := context.Background()
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, Greeter{}, nil)
	defer server.Close()
	client := capnweb.NewSession(b, nil, nil)
	defer client.Close()

	api := client.Main()
	greeting := api.Call("greet", "Ann")
	defer greeting.Release()
	var s string
	if err := greeting.Decode(ctx, &s); err != nil {
		panic(err)
	}
	fmt.Println(s)

	// Pipelining: login's result is used before it arrives; one round trip in all.
	name := api.Call("login", "bob").Call("name")
	defer name.Release()
	v, err := name.Await(ctx)
	fmt.Println(v, err)
	// Output:
	// Hello, Ann
	// bob <nil>
}

// A callback: the server calls a Go func the client passed.
func Example_callback() {
	ctx := context.Background()
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, &Notifier{}, nil)
	defer server.Close()
	client := capnweb.NewSession(b, nil, nil)
	defer client.Close()

	p := client.Main().Call("twice", func(n float64) float64 { return n * 10 }, 4)
	defer p.Release()
	v, _ := p.Await(ctx)
	fmt.Println(v)
	// Output: 80
}

type Notifier struct{ capnweb.Target }

// Twice calls cb(n) twice and adds the results.
func (Notifier) Twice(ctx context.Context, cb *capnweb.Stub, n float64) (float64, error) {
	var sum float64
	for range 2 {
		p := cb.Invoke(n)
		var r float64
		err := p.Decode(ctx, &r)
		p.Release()
		if err != nil {
			return 0, err
		}
		sum += r
	}
	return sum, nil
}

// Shelf keeps what it is given; a JavaScript object given to it keeps its key order.
type Shelf struct {
	capnweb.Target
	item any
}

func (s *Shelf) Put(v any) { s.item = v }
func (s *Shelf) Take() any { return s.item }

// An object keeps its key order through Go: here a Go client sends an Object, as a JavaScript
// client sends its objects, and gets it back later in the same order.
func ExampleObject() {
	ctx := context.Background()
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, &Shelf{}, nil)
	defer server.Close()
	client := capnweb.NewSession(b, nil, nil)
	defer client.Close()

	put := client.Main().Call("put", capnweb.Object{{Key: "zeta", Value: 1}, {Key: "alpha", Value: 2}})
	put.Release()
	take := client.Main().Call("take")
	defer take.Release()
	v, err := take.Await(ctx)
	if err != nil {
		panic(err)
	}
	o := v.(capnweb.Object)
	for _, p := range o {
		fmt.Println(p.Key, p.Value)
	}
	alpha, _ := o.Get("alpha")
	fmt.Println(alpha)
	// Output:
	// zeta 1
	// alpha 2
	// 2
}
