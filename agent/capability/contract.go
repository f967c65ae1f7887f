package capability

// Contracts and their patterns: what a capability's calls may reach, and the check each effect
// goes through. A Contract is plain data (it is in manifests and on the wire); a capability
// holds it compiled, as a matcher.

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Access is a kind of effect a contract bounds; its value is the contract's field name.
type Access string

// The kinds of access.
const (
	// Read: reading a resource (a file, the clock, the agent's memory).
	Read Access = "reads"
	// Write: modifying a resource.
	Write Access = "writes"
	// Execute: running a command or an action.
	Execute Access = "executes"
	// Network: reaching a URL.
	Network Access = "network"
	// Spawn: creating an agent or a capability. A contract allows it or not: its resource is
	// only recorded.
	Spawn Access = "spawns"
)

// Contract says what a capability's calls may reach: resources each call may read or write,
// commands it may execute, URLs it may reach, and whether it may spawn agents or capabilities.
// Every pattern is a resource pattern (see docs/capabilities.md, "Patterns"): `kind:glob`
// (file:notes/*), a URL pattern (https://api.example.com/*) or `*`. The zero Contract allows
// nothing.
type Contract struct {
	Reads    []string `json:"reads,omitempty"`
	Writes   []string `json:"writes,omitempty"`
	Executes []string `json:"executes,omitempty"`
	Network  []string `json:"network,omitempty"`
	Spawns   bool     `json:"spawns,omitempty"`
}

// Contract limits: a contract is small, and checking it is a loop over its patterns.
const (
	maxPatterns   = 64  // per field
	maxPatternLen = 512 // bytes
)

// ErrBadContract reports a malformed contract or pattern.
var ErrBadContract = errors.New("capability: malformed contract")

// Validate reports whether every pattern of c is well formed.
func (c Contract) Validate() error {
	_, err := compileContract(c)
	return err
}

// Allows reports whether c allows access a to resource. It compiles c each time; a
// capability checks its calls against a compiled copy.
func (c Contract) Allows(a Access, resource string) bool {
	m, err := compileContract(c)
	return err == nil && m.allows(a, resource)
}

// Within reports whether every resource c allows is allowed by parent: each pattern of c lies
// inside a pattern of parent's same field, and c spawns only if parent does. The check is
// sound, not complete: a pattern it cannot prove inside is reported, naming it.
func (c Contract) Within(parent Contract) error {
	cm, err := compileContract(c)
	if err != nil {
		return err
	}
	pm, err := compileContract(parent)
	if err != nil {
		return err
	}
	for _, a := range []Access{Read, Write, Execute, Network} {
		for _, q := range cm.field(a) {
			if !slices.ContainsFunc(pm.field(a), func(p pattern) bool { return p.covers(q) }) {
				return fmt.Errorf("%w: %s pattern %q is not inside the parent's contract", ErrBadContract, a, q.raw)
			}
		}
	}
	if c.Spawns && !parent.Spawns {
		return fmt.Errorf("%w: spawns, which the parent's contract does not allow", ErrBadContract)
	}
	return nil
}

// ReadOnly is c without writes, executes and spawns.
func (c Contract) ReadOnly() Contract {
	return Contract{Reads: slices.Clone(c.Reads), Network: slices.Clone(c.Network)}
}

// IsZero reports whether c allows nothing.
func (c Contract) IsZero() bool {
	return len(c.Reads)+len(c.Writes)+len(c.Executes)+len(c.Network) == 0 && !c.Spawns
}

// String is c in words, for a user asked to approve it: "reads file:notes/*; network
// https://api.example.com/*", or "nothing".
func (c Contract) String() string {
	var parts []string
	for _, f := range []struct {
		a  Access
		ps []string
	}{{Read, c.Reads}, {Write, c.Writes}, {Execute, c.Executes}, {Network, c.Network}} {
		if len(f.ps) > 0 {
			parts = append(parts, string(f.a)+" "+strings.Join(f.ps, ", "))
		}
	}
	if c.Spawns {
		parts = append(parts, "spawns agents or capabilities")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

func (c Contract) clone() Contract {
	return Contract{Reads: slices.Clone(c.Reads), Writes: slices.Clone(c.Writes),
		Executes: slices.Clone(c.Executes), Network: slices.Clone(c.Network), Spawns: c.Spawns}
}

// matcher is a compiled contract.
type matcher struct {
	reads, writes, executes, network []pattern
	spawns                           bool
}

func compileContract(c Contract) (*matcher, error) {
	m := &matcher{spawns: c.Spawns}
	for _, f := range []struct {
		a   Access
		src []string
		dst *[]pattern
	}{{Read, c.Reads, &m.reads}, {Write, c.Writes, &m.writes}, {Execute, c.Executes, &m.executes}, {Network, c.Network, &m.network}} {
		if len(f.src) > maxPatterns {
			return nil, fmt.Errorf("%w: more than %d %s patterns", ErrBadContract, maxPatterns, f.a)
		}
		for _, s := range f.src {
			p, err := parsePattern(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrBadContract, f.a, err)
			}
			*f.dst = append(*f.dst, p)
		}
	}
	return m, nil
}

func (m *matcher) field(a Access) []pattern {
	switch a {
	case Read:
		return m.reads
	case Write:
		return m.writes
	case Execute:
		return m.executes
	case Network:
		return m.network
	}
	return nil
}

// allows reports whether the contract allows access a to resource.
func (m *matcher) allows(a Access, resource string) bool {
	if a == Spawn {
		return m.spawns
	}
	ps := m.field(a)
	if len(ps) == 0 {
		return false
	}
	r, ok := parseResource(resource)
	if !ok {
		return false
	}
	for i := range ps {
		if ps[i].matches(r) {
			return true
		}
	}
	return false
}

// pattern is a compiled resource pattern.
type pattern struct {
	raw  string
	any  bool   // "*": every resource
	kind string // "file", "clock", …; "" for a URL pattern
	glob string // the rest after "kind:", or the URL's path (and ?query)
	// URL patterns
	scheme, host, port string // host "*" any, "*.d" subdomains of d
}

// resource is a parsed resource: a kind and the rest, or a URL's parts.
type resource struct {
	kind, rest         string
	scheme, host, port string
	path               string // escaped path, with "?query" when there is one
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}

func parsePattern(s string) (pattern, error) {
	if s == "" || len(s) > maxPatternLen {
		return pattern{}, fmt.Errorf("pattern %q: empty or longer than %d bytes", truncate(s, 64), maxPatternLen)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return pattern{}, fmt.Errorf("pattern %q: control character", truncate(s, 64))
	}
	if s == "*" {
		return pattern{raw: s, any: true}, nil
	}
	if isURLForm(s) {
		return parseURLPattern(s)
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || !validKind(kind) {
		return pattern{}, fmt.Errorf("pattern %q: want kind:glob (file:notes/*), a URL or *", s)
	}
	if kind == "file" {
		if err := checkFileGlob(rest); err != nil {
			return pattern{}, fmt.Errorf("pattern %q: %v", s, err)
		}
	}
	return pattern{raw: s, kind: kind, glob: rest}, nil
}

func parseURLPattern(s string) (pattern, error) {
	scheme, rest, _ := strings.Cut(s, "://")
	scheme = strings.ToLower(scheme)
	if _, ok := defaultPorts[scheme]; !ok {
		return pattern{}, fmt.Errorf("pattern %q: scheme %q: want http, https, ws or wss", s, scheme)
	}
	hostport, path, hasPath := strings.Cut(rest, "/")
	if strings.ContainsAny(hostport, "@?#") {
		return pattern{}, fmt.Errorf("pattern %q: user info, query or fragment before the path", s)
	}
	host, port := hostport, ""
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		host, port = hostport[:i], hostport[i+1:]
		if port != "*" && (port == "" || strings.Trim(port, "0123456789") != "") {
			return pattern{}, fmt.Errorf("pattern %q: bad port", s)
		}
	}
	if strings.Contains(host, "*") && strings.HasSuffix(host, ".") {
		return pattern{}, fmt.Errorf("pattern %q: a host wildcard is * or *.domain", s)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case host == "":
		return pattern{}, fmt.Errorf("pattern %q: no host", s)
	case host == "*":
	case strings.HasPrefix(host, "*."):
		if strings.Contains(host[2:], "*") || host[2:] == "" {
			return pattern{}, fmt.Errorf("pattern %q: a host wildcard is * or *.domain", s)
		}
	case strings.Contains(host, "*"):
		return pattern{}, fmt.Errorf("pattern %q: a host wildcard is * or *.domain", s)
	}
	if port == "" {
		port = defaultPorts[scheme]
	}
	glob := "/*"
	if hasPath {
		glob = "/" + path
		if strings.Contains(glob, "#") {
			return pattern{}, fmt.Errorf("pattern %q: fragment", s)
		}
		if hasDotSegment(glob) {
			return pattern{}, fmt.Errorf("pattern %q: . or .. path segment", s)
		}
	}
	return pattern{raw: s, scheme: scheme, host: host, port: port, glob: glob}, nil
}

func isURLForm(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && validKind(strings.ToLower(s[:i]))
}

func validKind(k string) bool {
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	return strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789+.-") == ""
}

// checkFileGlob refuses file patterns that name nothing a file resource can be: absolute
// paths and . or .. segments (file resources are clean, relative paths).
func checkFileGlob(g string) error {
	if strings.HasPrefix(g, "/") {
		return errors.New("file patterns are relative to the file system's root")
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == ".." || (seg == "." && g != ".") {
			return errors.New(". or .. segment")
		}
	}
	return nil
}

// parseResource parses a resource named by a capability: a URL or kind:rest.
func parseResource(s string) (resource, bool) {
	if isURLForm(s) {
		u, err := url.Parse(s)
		if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
			return resource{}, false
		}
		scheme := strings.ToLower(u.Scheme)
		port := u.Port()
		if port == "" {
			port = defaultPorts[scheme]
		}
		p := u.EscapedPath()
		if p == "" {
			p = "/"
		}
		if hasDotSegment(p) {
			return resource{}, false
		}
		if u.RawQuery != "" || u.ForceQuery {
			p += "?" + u.RawQuery
		}
		return resource{scheme: scheme, host: strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port: port, path: p}, true
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || !validKind(kind) {
		return resource{}, false
	}
	if kind == "file" && (checkFileGlob(rest) != nil || path.Clean(rest) != rest) {
		return resource{}, false // file resources are clean: notes/../secret never passes for notes/*
	}
	return resource{kind: kind, rest: rest}, true
}

// hasDotSegment reports a . or .. segment in a URL path, percent-encoded or not: a contract
// never matches one, so /v1/../admin cannot pass for /v1/*.
func hasDotSegment(p string) bool {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	for _, seg := range strings.Split(p, "/") {
		s := strings.ToLower(strings.ReplaceAll(strings.ToLower(seg), "%2e", "."))
		if s == "." || s == ".." {
			return true
		}
	}
	return false
}

func (p *pattern) matches(r resource) bool {
	switch {
	case p.any:
		return true
	case p.kind != "":
		return r.kind == p.kind && globMatchDir(p.glob, r.rest)
	case r.scheme == "":
		return false
	}
	return r.scheme == p.scheme && (p.port == "*" || r.port == p.port) && hostMatch(p.host, r.host) && globMatchDir(p.glob, r.path)
}

func hostMatch(p, h string) bool {
	switch {
	case p == "*":
		return true
	case strings.HasPrefix(p, "*."):
		return strings.HasSuffix(h, p[1:]) && len(h) > len(p)-1
	}
	return p == h
}

// covers reports whether every resource q matches, p matches too (soundly: false when it
// cannot tell).
func (p *pattern) covers(q pattern) bool {
	switch {
	case p.any:
		return true
	case q.any:
		return false
	case p.kind != "":
		return q.kind == p.kind && globCoversDir(p.glob, q.glob)
	case q.kind != "":
		return false
	}
	return p.scheme == q.scheme && (p.port == "*" || p.port == q.port) && hostCovers(p.host, q.host) && globCoversDir(p.glob, q.glob)
}

func hostCovers(p, q string) bool {
	switch {
	case p == "*":
		return true
	case q == "*":
		return false
	case strings.HasPrefix(p, "*."):
		base := strings.TrimPrefix(q, "*.")
		return hostMatch(p, q) || (strings.HasPrefix(q, "*.") && (base == p[2:] || hostMatch(p, base)))
	}
	return p == q
}

// globMatchDir matches s against glob g, where a g ending in "/*" also matches the directory
// itself (g without "/*").
func globMatchDir(g, s string) bool {
	if globMatch(g, s) {
		return true
	}
	d, ok := strings.CutSuffix(g, "/*")
	return ok && globMatch(d, s)
}

// globMatch matches s against g, where * matches any run of bytes.
func globMatch(g, s string) bool {
	star, next := -1, 0 // the last star in g, and where in s its match would end
	i, j := 0, 0
	for j < len(s) {
		switch {
		case i < len(g) && g[i] == '*':
			star, next = i, j
			i++
		case i < len(g) && g[i] == s[j]:
			i++
			j++
		case star >= 0:
			next++
			i, j = star+1, next
		default:
			return false
		}
	}
	for i < len(g) && g[i] == '*' {
		i++
	}
	return i == len(g)
}

// globCoversDir reports whether every string the dir-glob q matches, the dir-glob p matches.
func globCoversDir(p, q string) bool {
	in := func(x string) bool { // glob(x) ⊆ L(p)
		if globCovers(p, x) {
			return true
		}
		d, ok := strings.CutSuffix(p, "/*")
		return ok && globCovers(d, x)
	}
	if !in(q) {
		return false
	}
	if d, ok := strings.CutSuffix(q, "/*"); ok {
		return in(d)
	}
	return true
}

// globCovers reports whether every string glob q matches, glob p matches: p must match q where
// each * of q is consumed by a * of p. Sound; complete enough for the patterns people write.
func globCovers(p, q string) bool {
	// memo[i][j]: p[i:] covers q[j:]; 0 unknown, 1 yes, 2 no.
	memo := make([]byte, (len(p)+1)*(len(q)+1))
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		k := i*(len(q)+1) + j
		if memo[k] != 0 {
			return memo[k] == 1
		}
		var ok bool
		switch {
		case i == len(p):
			ok = j == len(q)
		case p[i] == '*':
			ok = rec(i+1, j) || (j < len(q) && rec(i, j+1))
		default:
			ok = j < len(q) && q[j] != '*' && q[j] == p[i] && rec(i+1, j+1)
		}
		memo[k] = 2
		if ok {
			memo[k] = 1
		}
		return ok
	}
	return rec(0, 0)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
