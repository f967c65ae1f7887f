package hosting

// Definitions files: one JSON object per agent (docs/multi-agent.md, "A definition"), read
// strictly. A file holds one definition or an array of them; a directory, files of them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/internal/strictjson"
)

// MaxFileBytes bounds a definitions file.
const MaxFileBytes = 1 << 20

// Definition is one agent as a definitions file writes it. Every field but Name is optional.
type Definition struct {
	// Name is the agent's name: lower-case letters, digits and single hyphens, at most 64
	// bytes. It is the agent's path segment and gRPC tenant, and the name its memory is kept
	// under.
	Name string `json:"name"`
	// Description, Version, Provider, DocumentationURL and IconURL are the card's.
	Description      string    `json:"description,omitempty"`
	Version          string    `json:"version,omitempty"`
	Provider         *Provider `json:"provider,omitempty"`
	DocumentationURL string    `json:"documentationUrl,omitempty"`
	IconURL          string    `json:"iconUrl,omitempty"`
	// Policy names the built-in policy the agent starts from: "assistant", "notes" or "none"
	// (the default).
	Policy string `json:"policy,omitempty"`
	// Rules come before the policy's rules, in order; one named as a rule of the policy
	// replaces it in place.
	Rules []agent.Rule `json:"rules,omitempty"`
	// Axioms come after the policy's axioms.
	Axioms []agent.Rule `json:"axioms,omitempty"`
	// Limits override the policy's limits, field by field.
	Limits *Limits `json:"limits,omitempty"`
	// Knowledge is the operator's read-only knowledge every instance sees.
	Knowledge []Fact `json:"knowledge,omitempty"`
	// Tools names built-in tools: "clock". Nil means none ("assistant": clock).
	Tools []string `json:"tools,omitempty"`
	// Model is the language model its consult rules ask; nil means none.
	Model *Model `json:"model,omitempty"`
	// Capabilities is what its instances are offered.
	Capabilities *Capabilities `json:"capabilities,omitempty"`
	// Payments price its skills (x402); nil means every skill is free.
	Payments *Payments `json:"payments,omitempty"`

	// File is the file the definition was read from ("" for one made in code).
	File string `json:"-"`
}

// Provider is the card's provider.
type Provider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// Fact is an item of the operator's knowledge (agent.Fact).
type Fact struct {
	Subject string `json:"subject"`
	Value   string `json:"value"`
	// Reason says why every instance should know it; "" means "the operator's knowledge".
	Reason string `json:"reason,omitempty"`
	// Confidence is in (0, 1]; zero means 1.
	Confidence float64 `json:"confidence,omitempty"`
}

// Model is an OpenAI-compatible chat-completions endpoint.
type Model struct {
	// URL is the API root, such as http://127.0.0.1:11434/v1.
	URL string `json:"url"`
	// Model is the model's name at that endpoint.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable the API key is read from; "" means none.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
}

// Capabilities is what a definition offers its instances.
type Capabilities struct {
	// Offer names what the instances may install. Nil means ["self"]; empty means nothing.
	Offer []string `json:"offer"`
	// Preinstall names offered capabilities every new instance holds from the start.
	Preinstall []string `json:"preinstall,omitempty"`
	// Strategies are default strategies by capability, as capability.ParseStrategy reads them.
	Strategies map[string]string `json:"strategies,omitempty"`
	// Fetch configures the fetch capability.
	Fetch *FetchSettings `json:"fetch,omitempty"`
	// A2A configures the a2a capability (package agent/peer). Kept as written: the offer's
	// maker reads it.
	A2A json.RawMessage `json:"a2a,omitempty"`
}

// FetchSettings configure the fetch capability of one agent.
type FetchSettings struct {
	// Allow are the URL patterns it may reach; nil means the server's.
	Allow []string `json:"allow,omitempty"`
}

// Limits override a policy's limits; a zero field keeps the policy's. Durations are written
// as Go durations ("1h30m").
type Limits struct {
	CostLimit     uint64         `json:"costLimit,omitempty"`
	ReplayWindow  int            `json:"replayWindow,omitempty"`
	MaxEdits      int            `json:"maxEdits,omitempty"`
	EditWindow    Duration       `json:"editWindow,omitempty"`
	WorkingSize   int            `json:"workingSize,omitempty"`
	WorkingTTL    Duration       `json:"workingTTL,omitempty"`
	PromoteAfter  int            `json:"promoteAfter,omitempty"`
	ContextTokens int            `json:"contextTokens,omitempty"`
	ModelSteps    int            `json:"modelSteps,omitempty"`
	Approval      []agent.Action `json:"approval,omitempty"`
}

// Duration is a time.Duration written as a Go duration string.
type Duration time.Duration

// UnmarshalJSON reads a duration string ("90s", "1h").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("a duration is a string such as \"1h\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration such as \"1h\"", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ReadDefinitions reads the definitions at path: a directory's *.json files in name order, or
// one file. A file holds one definition (a JSON object) or several (an array). Each is decoded
// strictly (no unknown, duplicate or miscased key) and checked (Definition.Check); errors name
// the file. Two definitions with one name are refused.
func ReadDefinitions(path string) ([]*Definition, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no *.json agent definitions", path)
		}
	}
	var defs []*Definition
	for _, f := range files {
		ds, err := readFile(f)
		if err != nil {
			return nil, err
		}
		defs = append(defs, ds...)
	}
	if err := checkNames(defs); err != nil {
		return nil, err
	}
	return defs, nil
}

// readFile reads one definitions file.
func readFile(path string) ([]*Definition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readBounded(f, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defs, err := ParseDefinitions(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, d := range defs {
		d.File = path
	}
	return defs, nil
}

func readBounded(f *os.File, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return data, nil
}

// ParseDefinitions decodes one definition (a JSON object) or an array of them, strictly, and
// checks each.
func ParseDefinitions(data []byte) ([]*Definition, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	var defs []*Definition
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raw []json.RawMessage
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, err
		}
		for i, r := range raw {
			d, err := parseOne(r)
			if err != nil {
				return nil, fmt.Errorf("definition %d: %w", i+1, err)
			}
			defs = append(defs, d)
		}
		if len(defs) == 0 {
			return nil, errors.New("an empty array: no agent defined")
		}
	} else {
		d, err := parseOne(data)
		if err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	return defs, checkNames(defs)
}

func parseOne(data []byte) (*Definition, error) {
	var d Definition
	if err := strictjson.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	return &d, nil
}

// checkNames refuses two definitions with one name.
func checkNames(defs []*Definition) error {
	seen := map[string]*Definition{}
	for _, d := range defs {
		if o := seen[d.Name]; o != nil {
			return fmt.Errorf("two agents named %q (%s and %s)", d.Name, where(o), where(d))
		}
		seen[d.Name] = d
	}
	return nil
}

// where names a definition for an error: its file, or its name.
func where(d *Definition) string {
	if d.File != "" {
		return filepath.Base(d.File)
	}
	return "definition " + d.Name
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Policies are the built-in policies a definition may start from.
var Policies = map[string]func() *agent.Policy{
	"none":      func() *agent.Policy { return &agent.Policy{} },
	"notes":     agent.Notes,
	"assistant": agent.Assistant,
}

// Tools are the built-in tools a definition may name, with what the model is told of them.
var Tools = map[string]struct {
	Tool agent.Tool
	Help string
}{
	"clock": {agent.Clock(nil), "the current time in UTC (RFC 3339); its input is ignored"},
}

// Check checks what can be checked of d alone: its name, policy, tools, model, URLs, limits and
// capabilities' names and strategies. Rules compile when the agent is made (New).
func (d *Definition) Check() error {
	switch {
	case d.Name == "":
		return errors.New("name: required")
	case len(d.Name) > 64 || !capability.ValidName(d.Name):
		return fmt.Errorf("name: %q is not lower-case letters, digits and single hyphens (at most 64)", d.Name)
	}
	if d.Policy != "" && Policies[d.Policy] == nil {
		return fmt.Errorf("policy: %q is not one of assistant, notes, none", d.Policy)
	}
	for _, t := range d.Tools {
		if _, ok := Tools[t]; !ok {
			return fmt.Errorf("tools: no built-in tool %q (there is: clock)", t)
		}
	}
	if dup := firstDuplicate(d.Tools); dup != "" {
		return fmt.Errorf("tools: %q twice", dup)
	}
	for _, u := range []struct{ key, v string }{{"documentationUrl", d.DocumentationURL}, {"iconUrl", d.IconURL}} {
		if u.v != "" && !httpURL(u.v) {
			return fmt.Errorf("%s: %q is not an http(s) URL", u.key, u.v)
		}
	}
	if d.Provider != nil && (d.Provider.Organization == "" || !httpURL(d.Provider.URL)) {
		return errors.New("provider: needs an organization and an http(s) url")
	}
	if m := d.Model; m != nil {
		switch {
		case !httpURL(m.URL):
			return fmt.Errorf("model.url: %q is not an http(s) URL", m.URL)
		case m.Model == "":
			return errors.New("model.model: required")
		case m.APIKeyEnv != "" && !envName.MatchString(m.APIKeyEnv):
			return fmt.Errorf("model.apiKeyEnv: %q is not an environment variable's name", m.APIKeyEnv)
		}
	}
	for i, f := range d.Knowledge {
		if strings.TrimSpace(f.Subject) == "" || strings.TrimSpace(f.Value) == "" {
			return fmt.Errorf("knowledge %d: needs a subject and a value", i+1)
		}
		if f.Confidence < 0 || f.Confidence > 1 {
			return fmt.Errorf("knowledge %d: confidence is in (0, 1]", i+1)
		}
	}
	if c := d.Capabilities; c != nil {
		if dup := firstDuplicate(c.Offer); dup != "" {
			return fmt.Errorf("capabilities.offer: %q twice", dup)
		}
		for _, name := range c.Preinstall {
			if !slices.Contains(d.offered(), name) {
				return fmt.Errorf("capabilities.preinstall: %q is not offered", name)
			}
		}
		for name, st := range c.Strategies {
			if !slices.Contains(d.offered(), name) {
				return fmt.Errorf("capabilities.strategies: %q is not offered", name)
			}
			if _, err := capability.ParseStrategy(st); err != nil {
				return fmt.Errorf("capabilities.strategies.%s: %w", name, err)
			}
		}
		if c.Fetch != nil && !slices.Contains(d.offered(), "fetch") {
			return errors.New("capabilities.fetch: fetch is not offered")
		}
		if len(c.A2A) > 0 && !slices.Contains(d.offered(), "a2a") {
			return errors.New("capabilities.a2a: a2a is not offered")
		}
	}
	if d.Payments != nil {
		return d.Payments.check()
	}
	return nil
}

// offered names the capabilities d offers.
func (d *Definition) offered() []string {
	if d.Capabilities == nil || d.Capabilities.Offer == nil {
		return []string{"self"}
	}
	return d.Capabilities.Offer
}

// tools names d's built-in tools.
func (d *Definition) tools() []string {
	if d.Tools == nil && d.Policy == "assistant" {
		return []string{"clock"}
	}
	return d.Tools
}

func firstDuplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
