package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/internal/mediatype"
)

// extendedCardConfig is what serve's authenticated callers get beyond the public card
// (GetExtendedAgentCard; docs/security.md, "The extended agent card").
type extendedCardConfig struct {
	file string // JSON: what the extended card adds to, or changes of, the public card
}

func (x *extendedCardConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&x.file, "extended-card", envOr("A2AWEBCAP_EXTENDED_CARD", ""),
		"a JSON `file` of what authenticated callers get beyond the public agent card (GetExtendedAgentCard): its \"skills\" are added to the public card's, its \"description\", \"documentationUrl\", \"iconUrl\" and \"provider\" replace the public card's. Needs authentication (an -api-key, -jwt-issuer, … flag); with authentication and without this flag, the extended card is the public card (A2AWEBCAP_EXTENDED_CARD)")
}

// extendedAdditions is what -extended-card's file may hold.
type extendedAdditions struct {
	Description      *string            `json:"description"`
	DocumentationURL *string            `json:"documentationUrl"`
	IconURL          *string            `json:"iconUrl"`
	Provider         *a2a.AgentProvider `json:"provider"`
	Skills           []a2a.AgentSkill   `json:"skills"`
}

// extended returns the engine's ExtendedCard for the public card — once its capabilities and
// security schemes are final — and declares capabilities.extendedAgentCard on it. Without
// authentication there is no extended card (nil; GetExtendedAgentCard is then
// UNSUPPORTED_OPERATION), and -extended-card is an error. The extended card lists no
// interfaces: the bindings give it the public card's, for the caller's origin.
func (x *extendedCardConfig) extended(card *a2a.AgentCard, authenticates bool) (func(context.Context) (*a2a.AgentCard, error), error) {
	if !authenticates {
		if x.file != "" {
			return nil, errors.New("-extended-card needs authentication (-api-key, -jwt-issuer, -oidc-issuer, -basic-users-file, -introspect-url or -tls-client-ca): the extended card is for authenticated callers only")
		}
		return nil, nil
	}
	card.Capabilities.ExtendedAgentCard = true
	ext := *card
	ext.SupportedInterfaces = nil
	ext.Signatures = nil // the public card's signatures do not cover this one
	ext.Skills = slices.Clone(card.Skills)
	if x.file != "" {
		add, err := readAdditions(x.file)
		if err != nil {
			return nil, fmt.Errorf("-extended-card %s: %w", x.file, err)
		}
		if err := add.apply(&ext); err != nil {
			return nil, fmt.Errorf("-extended-card %s: %w", x.file, err)
		}
	}
	return func(context.Context) (*a2a.AgentCard, error) { return &ext, nil }, nil
}

func readAdditions(file string) (*extendedAdditions, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var add extendedAdditions
	if err := dec.Decode(&add); err != nil {
		return nil, fmt.Errorf("%w (it may hold skills, description, documentationUrl, iconUrl and provider; the rest is the public card's)", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return &add, nil
}

// apply changes ext, a copy of the public card, by add. A skill must be complete, must not
// reuse a public skill's ID, and may take only media types the public card's input modes
// accept: the bindings check every message against the public card.
func (add *extendedAdditions) apply(ext *a2a.AgentCard) error {
	if add.Description != nil {
		ext.Description = *add.Description
	}
	if add.DocumentationURL != nil {
		ext.DocumentationURL = *add.DocumentationURL
	}
	if add.IconURL != nil {
		ext.IconURL = *add.IconURL
	}
	if add.Provider != nil {
		ext.Provider = add.Provider
	}
	modes := mediatype.Modes(ext)
	for _, s := range add.Skills {
		switch {
		case s.ID == "" || s.Name == "" || s.Description == "":
			return fmt.Errorf("skill %q: id, name and description are required", s.ID)
		case slices.ContainsFunc(ext.Skills, func(o a2a.AgentSkill) bool { return o.ID == s.ID }):
			return fmt.Errorf("skill %q: the card already has a skill with this id", s.ID)
		}
		for _, m := range s.InputModes {
			if len(modes) > 0 && !mediatype.Accepts(modes, m) {
				return fmt.Errorf("skill %q takes %s, which the public card's input modes (%v) refuse", s.ID, m, modes)
			}
		}
		if s.Tags == nil {
			s.Tags = []string{}
		}
		ext.Skills = append(ext.Skills, s)
	}
	return nil
}
