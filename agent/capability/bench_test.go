package capability

import (
	"context"
	"encoding/json"
	"testing"
)

// The cost of a capability call through a set (argument checks, the strategy, the contract
// check at the effect, the result's check) against the same work as a direct Go call. The
// work is the probe's touch: decode {access, resource}, ask for the access, return
// {touched}. Run: go test -run X -bench Call -benchmem ./agent/capability/ — and compare the
// ns/op of BenchmarkCallDirect with the others in the same run. On a shared machine the times
// swing by 2-4x between runs; count instructions instead (callgrind needs Go's asynchronous
// preemption off):
//
//	go test -c -o /tmp/captest ./agent/capability/
//	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=cg.N \
//		/tmp/captest -test.run=X -test.bench='^BenchmarkCallDirect$' -test.benchtime=Nx
//
// for N = 1000 and 3000: (total(3000) - total(1000)) / 2000 is one call, setup cancelled out.

var benchArgs = json.RawMessage(`{"access":"reads","resource":"file:notes/a.txt"}`)

type touchArgs struct {
	Access   string `json:"access"`
	Resource string `json:"resource"`
}

// direct is touch as a plain Go function: the JSON in and out a model's tool call needs
// anyway, and nothing else.
func direct(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
	var a touchArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"touched": a.Resource})
}

var sink json.RawMessage

func BenchmarkCallDirect(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := direct(ctx, benchArgs)
		if err != nil {
			b.Fatal(err)
		}
		sink = out
	}
}

func benchSet(b *testing.B, st Strategy) *Set {
	s := NewSet(&SetOptions{Principal: "bench"})
	b.Cleanup(s.Close)
	c := probe(b, Contract{Reads: []string{"clock:now", "file:notes/*", "self:memory"}, Writes: []string{"file:notes/*"}})
	if err := s.Install(context.Background(), c, Grant{Strategy: st, Approved: true}); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchCall(b *testing.B, s *Set) {
	ctx := context.Background()
	r := Request{Capability: "probe", Method: "touch", Args: benchArgs, Origin: Origin{Kind: OriginModel}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.Call(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		sink = out
	}
}

func BenchmarkCallPreApproved(b *testing.B) { benchCall(b, benchSet(b, Strategy{Kind: PreApproved})) }
func BenchmarkCallContract(b *testing.B)    { benchCall(b, benchSet(b, Strategy{Kind: ContractBased})) }

func BenchmarkCallBudget(b *testing.B) {
	benchCall(b, benchSet(b, Strategy{Kind: BudgetBased, Budget: Budget{Calls: 1 << 62}}))
}

// BenchmarkCallAuditOnly adds a record in a MemoryAudit per call.
func BenchmarkCallAuditOnly(b *testing.B) { benchCall(b, benchSet(b, Strategy{Kind: AuditOnly})) }

// BenchmarkCallDerived is a call of a capability three derivations deep: three contracts
// checked.
func BenchmarkCallDerived(b *testing.B) {
	s := NewSet(&SetOptions{Principal: "bench"})
	b.Cleanup(s.Close)
	c := probe(b, Contract{Reads: []string{"file:*"}})
	d, err := c.Derive(Restrictions{Contract: &Contract{Reads: []string{"file:notes/*"}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Install(context.Background(), d, Grant{Strategy: Strategy{Kind: PreApproved}}); err != nil {
		b.Fatal(err)
	}
	benchCall(b, s)
}

// BenchmarkContractCheck is the contract check alone: a compiled contract of three patterns
// against a file resource.
func BenchmarkContractCheck(b *testing.B) {
	m, err := compileContract(Contract{Reads: []string{"clock:now", "self:memory", "file:notes/*"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !m.allows(Read, "file:notes/a.txt") {
			b.Fatal("refused")
		}
	}
}
