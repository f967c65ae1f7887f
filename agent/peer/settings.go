package peer

// Settings: what an operator writes (a definition's capabilities.a2a, or serve's -a2a-*
// flags), read strictly and checked before any capability is made of them.

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/internal/strictjson"
)

// Defaults of Settings.
const (
	DefaultMaxDepth = 4
	DefaultBudget   = 16
	DefaultTimeout  = 10 * time.Minute
)

// ErrBadSettings reports settings that cannot make the capability.
var ErrBadSettings = errors.New("peer: bad settings")

// Settings configure the a2a capability of one agent (docs/multi-agent.md, "Settings").
type Settings struct {
	// Allow are the contract's network patterns: the agent URLs it may call. Required.
	Allow []string `json:"allow"`
	// Networks are CIDRs it may reach although they are not public (127.0.0.1/32 for agents
	// of the same host). Nil: public addresses only.
	Networks []string `json:"networks,omitempty"`
	// Agents are base URLs of agents find and call's skill know without a registry. Nil: none.
	Agents []string `json:"agents,omitempty"`
	// Registry is the base URL of a registry find and call's skill search. "": none.
	Registry string `json:"registry,omitempty"`
	// Credentials say what to present to agents, per URL prefix. Nil: nothing.
	Credentials []Credential `json:"credentials,omitempty"`
	// MaxDepth is how deep a chain of calls may go. 0: DefaultMaxDepth.
	MaxDepth int `json:"maxDepth,omitempty"`
	// Budget is how many calls the whole tree of calls one message causes may make. 0:
	// DefaultBudget.
	Budget int `json:"budget,omitempty"`
	// Timeout bounds one call, waiting for the user included, as a Go duration ("10m"). "":
	// DefaultTimeout.
	Timeout string `json:"timeout,omitempty"`
	// Payer pays callees that ask for payment (x402), within a budget. Nil: a call asked to pay
	// fails with what the callee asked.
	Payer *PayerSettings `json:"payer,omitempty"`

	timeout  time.Duration
	networks []netip.Prefix
	events   int // the bound of events one call relays; 0: maxEvents (a test's lever)
}

// Credential is what to present to the agents whose URLs start with Prefix: a header whose
// value is read from the environment variable Env (with Scheme before it, as "Bearer"), or a
// capnweb token (a saved, attenuated session) read from CapnwebToken.Env.
type Credential struct {
	Prefix       string    `json:"prefix"`
	Header       string    `json:"header,omitempty"`
	Scheme       string    `json:"scheme,omitempty"`
	Env          string    `json:"env,omitempty"`
	CapnwebToken *TokenRef `json:"capnwebToken,omitempty"`
}

// PayerSettings configure paying callees (x402, docs/payments.md): the secp256k1 key that
// signs, read from the environment variable KeyEnv (hex), and the budget each principal
// holding the capability may spend, per token.
type PayerSettings struct {
	KeyEnv string     `json:"keyEnv"`
	Budget []PayLimit `json:"budget"`
	// MaxAmount caps one payment, in atomic units. "": only the budget caps it.
	MaxAmount string `json:"maxAmount,omitempty"`
}

// PayLimit is how much of one token (network and asset contract) a principal may spend, in
// atomic units (a decimal string).
type PayLimit struct {
	Network string `json:"network"`
	Asset   string `json:"asset"`
	Amount  string `json:"amount"`
}

// TokenRef names where a secret is: the environment variable Env.
type TokenRef struct {
	Env string `json:"env"`
}

// ParseSettings reads settings strictly (no unknown, repeated or mis-cased key) and checks
// them.
func ParseSettings(data []byte) (Settings, error) {
	var s Settings
	if err := strictjson.Unmarshal(data, &s); err != nil {
		return Settings{}, fmt.Errorf("%w: %v", ErrBadSettings, err)
	}
	return s, s.check()
}

// check validates s and fills its parsed fields.
func (s *Settings) check() error {
	if len(s.Allow) == 0 {
		return fmt.Errorf("%w: allow: the agent URLs it may call are required", ErrBadSettings)
	}
	if err := (capability.Contract{Network: s.Allow}).Validate(); err != nil {
		return fmt.Errorf("%w: allow: %v", ErrBadSettings, err)
	}
	s.networks = nil
	for _, n := range s.Networks {
		p, err := netip.ParsePrefix(strings.TrimSpace(n))
		if err != nil {
			return fmt.Errorf("%w: networks: %q is not a CIDR", ErrBadSettings, n)
		}
		s.networks = append(s.networks, p.Masked())
	}
	for _, a := range s.Agents {
		if _, err := agentURL(a); err != nil {
			return fmt.Errorf("%w: agents: %v", ErrBadSettings, err)
		}
	}
	if s.Registry != "" {
		if u, err := url.Parse(s.Registry); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: registry: %q is not an http(s) URL", ErrBadSettings, s.Registry)
		}
	}
	for i, c := range s.Credentials {
		switch {
		case c.Prefix == "":
			return fmt.Errorf("%w: credentials %d: prefix is required", ErrBadSettings, i+1)
		case c.CapnwebToken != nil && (c.Header != "" || c.Env != ""):
			return fmt.Errorf("%w: credentials %d: a header or a capnwebToken, not both", ErrBadSettings, i+1)
		case c.CapnwebToken != nil && c.CapnwebToken.Env == "":
			return fmt.Errorf("%w: credentials %d: capnwebToken.env is required", ErrBadSettings, i+1)
		case c.CapnwebToken == nil && (c.Header == "" || c.Env == ""):
			return fmt.Errorf("%w: credentials %d: header and env are required", ErrBadSettings, i+1)
		case c.Header != "" && http.CanonicalHeaderKey(c.Header) == "Host":
			return fmt.Errorf("%w: credentials %d: header %q", ErrBadSettings, i+1, c.Header)
		}
	}
	if s.MaxDepth < 0 || s.MaxDepth > 64 {
		return fmt.Errorf("%w: maxDepth %d: want 1 to 64", ErrBadSettings, s.MaxDepth)
	}
	if s.Budget < 0 || s.Budget > 1<<20 {
		return fmt.Errorf("%w: budget %d", ErrBadSettings, s.Budget)
	}
	if p := s.Payer; p != nil {
		if p.KeyEnv == "" {
			return fmt.Errorf("%w: payer.keyEnv: the environment variable holding the key is required", ErrBadSettings)
		}
		if len(p.Budget) == 0 {
			return fmt.Errorf("%w: payer.budget: at least one limit is required", ErrBadSettings)
		}
		for i, l := range p.Budget {
			if l.Network == "" || l.Asset == "" || !decimal(l.Amount) {
				return fmt.Errorf("%w: payer.budget %d: network, asset and a decimal amount are required", ErrBadSettings, i+1)
			}
		}
		if p.MaxAmount != "" && !decimal(p.MaxAmount) {
			return fmt.Errorf("%w: payer.maxAmount %q: want a decimal amount", ErrBadSettings, p.MaxAmount)
		}
	}
	s.timeout = DefaultTimeout
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("%w: timeout %q: want a Go duration such as 10m", ErrBadSettings, s.Timeout)
		}
		s.timeout = d
	}
	return nil
}

func (s *Settings) maxDepth() int  { return cmpOr(s.MaxDepth, DefaultMaxDepth) }
func (s *Settings) budget() int    { return cmpOr(s.Budget, DefaultBudget) }
func (s *Settings) maxEvents() int { return cmpOr(s.events, maxEvents) }

// credential returns the credential whose prefix is the longest that u starts with, if any.
func (s *Settings) credential(u string) *Credential {
	var best *Credential
	for i := range s.Credentials {
		c := &s.Credentials[i]
		if strings.HasPrefix(u, c.Prefix) && (best == nil || len(c.Prefix) > len(best.Prefix)) {
			best = c
		}
	}
	return best
}

// agentURL normalizes an agent's URL — its base URL, or the URL of its card — to the URL of
// its card.
func agentURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", truncate(raw, 200))
	}
	if u.User != nil {
		return "", fmt.Errorf("%q: a URL with credentials", truncate(u.Redacted(), 200))
	}
	u.Fragment, u.RawFragment, u.RawQuery = "", "", ""
	if !strings.HasSuffix(u.Path, ".json") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/.well-known/agent-card.json"
		u.RawPath = ""
	}
	return u.String(), nil
}

// baseOf is the base URL (with its final slash) of the agent whose card is at card.
func baseOf(card string) string {
	if b, ok := strings.CutSuffix(card, ".well-known/agent-card.json"); ok {
		return b
	}
	return card
}

// nameOf is a short name for the agent at base: its path's last segment (the hosted agent's
// name), else its host.
func nameOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	p := strings.Trim(u.Path, "/")
	if i := strings.LastIndex(p, "/"); i >= 0 {
		p = p[i+1:]
	}
	if p != "" && !strings.HasSuffix(p, ".json") {
		return p
	}
	return u.Host
}

// decimal reports whether s is a non-negative decimal integer of at most 78 digits (a uint256).
func decimal(s string) bool {
	if s == "" || len(s) > 78 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // not in the middle of a character
	}
	return s[:n] + "…"
}
