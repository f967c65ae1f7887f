package capability

// Concurrency: a Capability is immutable after New or Derive, except for its revocation, which
// is a context (life) canceled once, by Revoke on it or on an ancestor; any goroutine may call
// any method. A call runs in its caller's goroutine; its Call value is the implementation's, and
// the record it keeps (resources touched, refusals, bytes) has its own mutex, so an
// implementation may check accesses from goroutines of its own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The errors of calls. Test with errors.Is: the errors returned wrap them with detail.
var (
	// ErrRevoked: the capability, or one it was derived from, was revoked.
	ErrRevoked = errors.New("capability: revoked")
	// ErrOutsideContract: the call would reach a resource its contract does not allow.
	ErrOutsideContract = errors.New("capability: outside the contract")
	// ErrNoMethod: the capability has no such method (or a derivation removed it).
	ErrNoMethod = errors.New("capability: no such method")
	// ErrBadArgs: the arguments do not match the method's parameter schema.
	ErrBadArgs = errors.New("capability: bad arguments")
	// ErrBadResult: the implementation returned a result that does not match the method's
	// result schema, or that is too large.
	ErrBadResult = errors.New("capability: bad result")
	// ErrBadSpec: a Description or Restrictions that New or Derive cannot accept.
	ErrBadSpec = errors.New("capability: bad specification")
)

// Size limits of one call.
const (
	// MaxArgs is the largest arguments a call accepts, in bytes of JSON.
	MaxArgs = 1 << 20
	// MaxResult is the largest result a call returns, in bytes of JSON.
	MaxResult = 4 << 20
)

// Method describes one method of a capability: the model's tool schema is Params.
type Method struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Params is the schema of the arguments, an object; nil means no arguments ({}).
	Params *Schema `json:"params,omitempty"`
	// Result is the schema of the result; nil means any JSON value.
	Result *Schema `json:"result,omitempty"`
	// Effects are what every call of the method reaches, checked against the contract before
	// the implementation runs. They let a capability whose effects happen out of sight — a
	// client's, over the network — declare them, so the contract and every derivation of it
	// bound them on this side.
	Effects []Effect `json:"effects,omitempty"`
}

// Effect is an access a method's every call makes. In Resource, {name} stands for the
// method's string argument name ("" when absent): "doc:{id}", "file:{path}".
type Effect struct {
	Access   Access `json:"access"`
	Resource string `json:"resource"`
}

// maxEffects bounds a method's effects, maxMethods a capability's methods.
const (
	maxEffects = 16
	maxMethods = 64
)

var placeholderRE = regexp.MustCompile(`\{([a-zA-Z_][a-zA-Z0-9_]*)\}`)

// checkEffects reports whether m's effects are well formed: a known access, and placeholders
// that name string parameters.
func checkEffects(m Method) error {
	if len(m.Effects) > maxEffects {
		return fmt.Errorf("more than %d effects", maxEffects)
	}
	for _, e := range m.Effects {
		switch e.Access {
		case Read, Write, Execute, Network, Spawn:
		default:
			return fmt.Errorf("effect access %q", e.Access)
		}
		if e.Resource == "" || len(e.Resource) > maxPatternLen {
			return fmt.Errorf("effect resource %q", truncate(e.Resource, 64))
		}
		for _, p := range placeholderRE.FindAllStringSubmatch(e.Resource, -1) {
			if m.Params == nil || m.Params.Properties[p[1]] == nil || m.Params.Properties[p[1]].Type != "string" {
				return fmt.Errorf("effect %q: {%s} is not a string parameter", e.Resource, p[1])
			}
		}
	}
	return nil
}

// expandEffect fills the placeholders of resource with args' string values.
func expandEffect(resource string, args any) string {
	m, _ := args.(map[string]any)
	return placeholderRE.ReplaceAllStringFunc(resource, func(p string) string {
		s, _ := m[p[1:len(p)-1]].(string)
		return s
	})
}

// Description describes a capability: what New makes one of, what Describe returns (the
// model's tool schemas are its methods' parameter schemas), and what a client lending a
// capability declares (ParseDescription).
type Description struct {
	// Name: lower-case letters and digits, words joined by single hyphens, at most 32 bytes.
	Name        string `json:"name"`
	Description string `json:"description"`
	// Methods: names are letters and digits, words joined by single underscores, at most 32
	// bytes.
	Methods  []Method `json:"methods"`
	Contract Contract `json:"contract"`
}

// Impl is what a capability does. Call runs c.Method with c.Args (already checked against the
// method's parameter schema) and returns the result: a value encoding/json marshals, or a
// json.RawMessage. Before every effect it asks c.Check; it must not reach anything c.Check
// refused (the call fails anyway). ctx ends when the caller cancels or the capability is
// revoked.
type Impl interface {
	Call(ctx context.Context, c *Call) (any, error)
}

// Funcs is an Impl with one function per method.
type Funcs map[string]func(ctx context.Context, c *Call) (any, error)

// Call runs the function of c.Method.
func (f Funcs) Call(ctx context.Context, c *Call) (any, error) {
	fn := f[c.Method]
	if fn == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoMethod, c.Method)
	}
	return fn(ctx, c)
}

// Capability is a power an agent may be granted: see the package documentation. It is safe
// for concurrent use.
type Capability struct {
	name, desc string
	methods    []Method // the methods this capability offers, in order
	contract   Contract
	match      *matcher
	impl       Impl
	parent     *Capability
	life       context.Context // canceled, with an ErrRevoked cause, on revocation
	revoke     context.CancelCauseFunc

	paramsOnce sync.Once
	params     []json.RawMessage // each method's parameter schema as JSON, made once (see Set.Tools)
}

// toolParams returns the JSON Schemas of the methods' parameters, in order. Methods do not
// change once a capability is made, so they are encoded once: every consult of every turn
// asks for them, and encoding them each time was two fifths of a turn's CPU.
func (c *Capability) toolParams() []json.RawMessage {
	c.paramsOnce.Do(func() {
		for _, m := range c.methods {
			ps := m.Params
			if ps == nil {
				ps = &Schema{Type: "object"}
			}
			data, _ := json.Marshal(ps)
			c.params = append(c.params, data)
		}
	})
	return c.params
}

var (
	nameRE   = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	methodRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*(_[a-zA-Z0-9]+)*$`)
)

// ValidName reports whether name may name a capability.
func ValidName(name string) bool { return len(name) <= 32 && nameRE.MatchString(name) }

// New makes a capability of spec, implemented by impl. The description's names, schemas,
// effects and contract are checked; the capability lives until revoked.
func New(spec Description, impl Impl) (*Capability, error) {
	if !ValidName(spec.Name) {
		return nil, fmt.Errorf("%w: name %q", ErrBadSpec, spec.Name)
	}
	if impl == nil {
		return nil, fmt.Errorf("%w: %s has no implementation", ErrBadSpec, spec.Name)
	}
	if len(spec.Methods) == 0 || len(spec.Methods) > maxMethods {
		return nil, fmt.Errorf("%w: %s has no methods, or more than %d", ErrBadSpec, spec.Name, maxMethods)
	}
	seen := map[string]bool{}
	for _, m := range spec.Methods {
		if len(m.Name) > 32 || !methodRE.MatchString(m.Name) || seen[m.Name] {
			return nil, fmt.Errorf("%w: %s: method name %q", ErrBadSpec, spec.Name, m.Name)
		}
		seen[m.Name] = true
		if m.Params != nil && m.Params.Type != "object" {
			return nil, fmt.Errorf("%w: %s.%s: parameters are an object", ErrBadSpec, spec.Name, m.Name)
		}
		if err := checkEffects(m); err != nil {
			return nil, fmt.Errorf("%w: %s.%s: %v", ErrBadSpec, spec.Name, m.Name, err)
		}
		for _, s := range []*Schema{m.Params, m.Result} {
			if s == nil {
				continue
			}
			if err := s.check(0); err != nil {
				return nil, fmt.Errorf("%w: %s.%s: %v", ErrBadSpec, spec.Name, m.Name, err)
			}
		}
	}
	mt, err := compileContract(spec.Contract)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadSpec, spec.Name, err)
	}
	c := &Capability{name: spec.Name, desc: spec.Description, methods: slices.Clone(spec.Methods),
		contract: spec.Contract.clone(), match: mt, impl: impl}
	c.life, c.revoke = context.WithCancelCause(context.Background())
	return c, nil
}

// Name returns the capability's name.
func (c *Capability) Name() string { return c.name }

// Description returns what the capability is for.
func (c *Capability) Description() string { return c.desc }

// Contract returns a copy of the capability's contract.
func (c *Capability) Contract() Contract { return c.contract.clone() }

// Describe returns the capability's methods with their schemas, and its contract.
func (c *Capability) Describe() Description {
	return Description{Name: c.name, Description: c.desc, Methods: slices.Clone(c.methods), Contract: c.contract.clone()}
}

// Parent returns the capability c was derived from, or nil.
func (c *Capability) Parent() *Capability { return c.parent }

// Revoke revokes c: every call of c, and of every capability derived from it, fails with
// ErrRevoked from now on, and calls in flight see their context canceled. reason (nil for
// none) says why, in the error. Revoking again does nothing.
func (c *Capability) Revoke(reason error) {
	cause := ErrRevoked
	if reason != nil {
		cause = fmt.Errorf("%w: %s: %w", ErrRevoked, c.name, reason)
	}
	c.revoke(cause)
}

// Err is nil while c may be called, and an error wrapping ErrRevoked once it, or a capability
// it was derived from, is revoked.
func (c *Capability) Err() error {
	if c.life.Err() == nil {
		return nil
	}
	return context.Cause(c.life)
}

// Done is closed when c is revoked.
func (c *Capability) Done() <-chan struct{} { return c.life.Done() }

// Restrictions narrow a capability in Derive. The zero value narrows nothing: a copy that can
// be revoked on its own.
type Restrictions struct {
	// Methods are the only methods the derived capability offers; nil means all of its
	// parent's. Each must be one of the parent's.
	Methods []string `json:"methods,omitempty"`
	// Contract is the derived capability's contract; nil means its parent's. Each of its
	// patterns must lie inside the parent's contract.
	Contract *Contract `json:"contract,omitempty"`
	// ReadOnly removes writes, executes and spawns from the contract.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// apply returns the contract and methods r leaves of contract and methods.
func (r Restrictions) apply(name string, contract Contract, methods []Method) (Contract, []Method, error) {
	if r.Contract != nil {
		if err := r.Contract.Within(contract); err != nil {
			return Contract{}, nil, fmt.Errorf("%w: %s: %v", ErrBadSpec, name, err)
		}
		contract = r.Contract.clone()
	}
	if r.ReadOnly {
		contract = contract.ReadOnly()
	}
	if r.Methods != nil {
		var kept []Method
		for _, n := range r.Methods {
			i := slices.IndexFunc(methods, func(m Method) bool { return m.Name == n })
			if i < 0 {
				return Contract{}, nil, fmt.Errorf("%w: %s has no method %q", ErrBadSpec, name, n)
			}
			if !slices.ContainsFunc(kept, func(m Method) bool { return m.Name == n }) {
				kept = append(kept, methods[i])
			}
		}
		if len(kept) == 0 {
			return Contract{}, nil, fmt.Errorf("%w: %s: no methods left", ErrBadSpec, name)
		}
		methods = kept
	}
	return contract, methods, nil
}

// Derive returns a capability narrower than c by r: fewer methods, a contract inside c's, or
// read-only. It is never wider: each call is checked against its own contract and against
// each of its ancestors'. Revoking c revokes it; revoking it leaves c alone. A derived
// capability lives until it or an ancestor is revoked: whoever derives one revokes it when done
// with it (a Set does).
func (c *Capability) Derive(r Restrictions) (*Capability, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	contract, methods, err := r.apply(c.name, c.contract, c.methods)
	if err != nil {
		return nil, err
	}
	mt, err := compileContract(contract)
	if err != nil {
		return nil, err
	}
	d := &Capability{name: c.name, desc: c.desc, methods: slices.Clone(methods), contract: contract,
		match: mt, impl: c.impl, parent: c}
	d.life, d.revoke = context.WithCancelCause(c.life)
	return d, nil
}

// Root returns the capability c was first made as, by New: the end of its Parent chain.
func (c *Capability) Root() *Capability {
	for c.parent != nil {
		c = c.parent
	}
	return c
}

// descendsFrom reports whether c is a, or was derived (directly or not) from a.
func (c *Capability) descendsFrom(a *Capability) bool {
	for x := c; x != nil; x = x.parent {
		if x == a {
			return true
		}
	}
	return false
}

func (c *Capability) method(name string) *Method {
	for i := range c.methods {
		if c.methods[i].Name == name {
			return &c.methods[i]
		}
	}
	return nil
}

// allows checks access a to resource against c's contract and every ancestor's.
func (c *Capability) allows(a Access, resource string) bool {
	for x := c; x != nil; x = x.parent {
		if !x.match.allows(a, resource) {
			return false
		}
	}
	return true
}

// Origin says who made a call: the model, a rule, the user, a sandboxed capability, the
// operator, or a client over the network.
type Origin struct {
	// Kind is one of the Origin* constants.
	Kind string `json:"kind"`
	// Name details it: the rule's name, the model's tool call ID.
	Name string `json:"name,omitempty"`
	// Task is the A2A task the call is made for, if any.
	Task string `json:"task,omitempty"`
}

// The origins of calls.
const (
	OriginModel    = "model"
	OriginRule     = "rule"
	OriginUser     = "user"
	OriginSandbox  = "sandbox"
	OriginOperator = "operator"
)

func (o Origin) String() string {
	if o.Name == "" {
		return cmpOr(o.Kind, "unknown")
	}
	return cmpOr(o.Kind, "unknown") + " " + o.Name
}

// Call is one call as its implementation sees it.
type Call struct {
	// Method is the method called.
	Method string
	// Args are the arguments: canonical JSON (RFC 8785), checked against the method's
	// parameter schema.
	Args json.RawMessage
	// Session is the A2A context the call is made in, if any.
	Session string
	// Origin is who made the call.
	Origin Origin

	capability *Capability
	meter      *meter // the budget, nil without one
	approval   string // the approved Pending the call carries out
	set        *Set   // the holder's set, when called through one
	// within is Request.Within: a check of each effect beyond the contract.
	within func(Access, string) error

	mu       sync.Mutex // guards the fields below
	accessed []string   // "reads file:a", in order, at most maxAccessed
	refused  error      // the first refusal
	bytes    int64
}

// maxAccessed bounds how many accesses a call's record keeps.
const maxAccessed = 32

// Decode decodes the call's arguments into v (which the schema has already checked).
func (c *Call) Decode(v any) error {
	if len(c.Args) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.Args, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArgs, err)
	}
	return nil
}

// Check asks whether the call may have access a to resource: nil if the capability's contract
// (and each ancestor's) allows it and the budget, for a write, has room for another file. A
// refusal is an error wrapping ErrOutsideContract (or ErrBudgetExhausted), recorded, and fails
// the call even if the implementation goes on.
func (c *Call) Check(a Access, resource string) error {
	var err error
	if !c.capability.allows(a, resource) {
		err = fmt.Errorf("%w: %s %s", ErrOutsideContract, a, truncate(resource, 256))
	} else if c.within != nil {
		err = c.within(a, resource)
	}
	if err == nil && a == Write && c.meter != nil {
		err = c.meter.file(resource)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.accessed) < maxAccessed {
		s := string(a) + " " + truncate(resource, 256)
		if err != nil {
			s += " (refused)"
		}
		c.accessed = append(c.accessed, s)
	}
	if err != nil && c.refused == nil {
		c.refused = err
	}
	return err
}

// Charge counts n bytes read, written or fetched against the call's budget: an error wrapping
// ErrBudgetExhausted, recorded like a refusal, when it has no room for them.
func (c *Call) Charge(n int64) error {
	var err error
	if c.meter != nil {
		err = c.meter.charge(n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += n
	if err != nil && c.refused == nil {
		c.refused = err
	}
	return err
}

// Remaining is how many bytes the call's budget has left, or -1 when it has no byte budget: an
// implementation reads at most that much.
func (c *Call) Remaining() int64 {
	if c.meter == nil {
		return -1
	}
	return c.meter.remaining()
}

// outcome is what invoke reports besides the result.
type outcome struct {
	accessed []string
	bytes    int64
	duration time.Duration
}

// invoke runs a call of c: revocation, method, arguments, the implementation (its accesses
// checked), the result. args are raw JSON from the caller.
func (c *Capability) invoke(ctx context.Context, call *Call, args json.RawMessage) (json.RawMessage, outcome, error) {
	start := time.Now()
	call.capability = c
	result, err := c.run(ctx, call, args)
	call.mu.Lock()
	o := outcome{accessed: slices.Clone(call.accessed), bytes: call.bytes, duration: time.Since(start)}
	call.mu.Unlock()
	return result, o, err
}

func (c *Capability) run(ctx context.Context, call *Call, args json.RawMessage) (json.RawMessage, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	m := c.method(call.Method)
	if m == nil {
		return nil, fmt.Errorf("%w: %s.%s", ErrNoMethod, c.name, call.Method)
	}
	v, canon, err := checkArgs(m, args)
	if err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %v", ErrBadArgs, c.name, call.Method, err)
	}
	call.Args = canon
	for _, e := range m.Effects {
		if err := call.Check(e.Access, expandEffect(e.Resource, v)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(c.life, func() { cancel(context.Cause(c.life)) })()
	out, err := c.callImpl(ctx, call)
	if rev := c.Err(); rev != nil {
		return nil, rev
	}
	call.mu.Lock()
	refused := call.refused
	call.mu.Unlock()
	if refused != nil { // whatever the implementation made of it
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	return checkResult(c.name, m, out)
}

// callImpl runs the implementation, turning a panic into an error: a capability's bug must not
// take the server down.
func (c *Capability) callImpl(ctx context.Context, call *Call) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("capability: %s.%s failed: panic: %v", c.name, call.Method, truncate(fmt.Sprint(p), 200))
		}
	}()
	return c.impl.Call(ctx, call)
}

// checkArgs checks raw arguments against m's parameter schema and returns them decoded and
// canonical.
func checkArgs(m *Method, args json.RawMessage) (any, json.RawMessage, error) {
	if len(args) > MaxArgs {
		return nil, nil, fmt.Errorf("larger than %d bytes", MaxArgs)
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	v, canon, err := decodeJSON(args)
	if err != nil {
		return nil, nil, err
	}
	ps := m.Params
	if ps == nil {
		ps = &Schema{Type: "object"}
	}
	if err := ps.validate(v, ""); err != nil {
		return nil, nil, err
	}
	return v, canon, nil
}

// checkResult marshals out and checks it against m's result schema.
func checkResult(name string, m *Method, out any) (json.RawMessage, error) {
	var raw []byte
	switch r := out.(type) {
	case json.RawMessage:
		raw = r
	case nil:
		raw = []byte("null")
	default:
		var err error
		if raw, err = json.Marshal(out); err != nil {
			return nil, fmt.Errorf("%w: %s.%s: %v", ErrBadResult, name, m.Name, err)
		}
	}
	if len(raw) > MaxResult {
		return nil, fmt.Errorf("%w: %s.%s: larger than %d bytes", ErrBadResult, name, m.Name, MaxResult)
	}
	v, canon, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %v", ErrBadResult, name, m.Name, err)
	}
	if err := m.Result.validate(v, "result"); err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %v", ErrBadResult, name, m.Name, err)
	}
	return canon, nil
}
