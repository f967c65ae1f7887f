package capability

// Capabilities implemented elsewhere: a client lends the agent an object over capnweb with a
// description of its methods and a declared contract. What this side can enforce, it does: the
// arguments and results against the schemas, each method's declared effects against the
// contract (and every derivation of it), revocation, strategies and the audit log. What the
// client's own code does with its own powers is the client's.

import (
	"context"
	"encoding/json"
	"fmt"
)

// RemoteFunc calls a method of a capability implemented elsewhere with canonical JSON
// arguments, and returns its JSON result.
type RemoteFunc func(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error)

// Remote makes a capability of desc whose calls go to call. Declare each method's effects
// (Method.Effects) so that its contract bounds something on this side: a method without
// effects is bounded by its schemas, the strategy and revocation only.
func Remote(desc Description, call RemoteFunc) (*Capability, error) {
	if call == nil {
		return nil, fmt.Errorf("%w: %s: no RemoteFunc", ErrBadSpec, desc.Name)
	}
	return New(desc, remote(call))
}

type remote RemoteFunc

func (r remote) Call(ctx context.Context, c *Call) (any, error) {
	out, err := r(ctx, c.Method, c.Args)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// maxDescription bounds a description a client sends, in bytes of JSON.
const maxDescription = 64 << 10

// ParseDescription reads a capability's description as a client declares it — {"name",
// "description", "methods": [{"name", "description", "params", "result", "effects"}],
// "contract"} — strictly: at most 64 KiB, no duplicate or unknown keys, every key spelled
// exactly, and everything New checks.
func ParseDescription(data []byte) (Description, error) {
	if len(data) > maxDescription {
		return Description{}, fmt.Errorf("%w: a description larger than %d bytes", ErrBadSpec, maxDescription)
	}
	var d Description
	if err := strictUnmarshal(data, &d); err != nil {
		return Description{}, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	if _, err := New(d, Funcs{}); err != nil {
		return Description{}, err
	}
	return d, nil
}
