package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/a2awebcap/a2awebcap/agent/session"
)

// sessionConfig is how serve configures the runtime's chat sessions (docs/sessions.md).
type sessionConfig struct {
	configFile, pricesFile string
	operators              string
}

func (s *sessionConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.configFile, "session-config", envOr("A2AWEBCAP_SESSION_CONFIG", ""),
		`with -agent runtime or notes: a JSON file configuring every chat session (A2A context): {"strategy": "coherent", "window": 4096, "interruption": "complete", "budget": {"tokens": 100000, "turns": 50, "costMicros": 500000, "wall": "3600s"}}; empty: the defaults (docs/sessions.md) (A2AWEBCAP_SESSION_CONFIG)`)
	fs.StringVar(&s.operators, "operators", envOr("A2AWEBCAP_OPERATORS", ""),
		"with -agent runtime or notes and authentication: comma-separated user `names` of the server's operators, who may view and change every principal's policy versions and reviews (the operator extension, docs/sessions.md); empty: nobody (A2AWEBCAP_OPERATORS)")
	fs.StringVar(&s.pricesFile, "prices", envOr("A2AWEBCAP_PRICES", ""),
		`with -agent runtime: a JSON file of model prices per million tokens, for sessions' cost budgets: {"gpt-4o-mini": {"input": 0.15, "output": 0.60}, "*": {...}}; empty: costs are unknown (A2AWEBCAP_PRICES)`)
}

// config reads the session configuration file, strictly; the zero Config without one.
func (s *sessionConfig) config() (session.Config, error) {
	var cfg session.Config
	if s.configFile == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(s.configFile)
	if err != nil {
		return cfg, fmt.Errorf("-session-config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("-session-config %s: %w", s.configFile, err)
	}
	if dec.More() {
		return cfg, fmt.Errorf("-session-config %s: data after the object", s.configFile)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("-session-config %s: %w", s.configFile, err)
	}
	return cfg, nil
}

// prices reads the price table; nil without one.
func (s *sessionConfig) prices() (session.Prices, error) {
	if s.pricesFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(s.pricesFile)
	if err != nil {
		return nil, fmt.Errorf("-prices: %w", err)
	}
	p, err := session.ParsePrices(data)
	if err != nil {
		return nil, fmt.Errorf("-prices %s: %w", s.pricesFile, err)
	}
	return p, nil
}

// operatorNames are the operators' user names.
func (s *sessionConfig) operatorNames() []string {
	var out []string
	for _, n := range strings.Split(s.operators, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
