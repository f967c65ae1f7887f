package main

// The a2a capability's flags (docs/multi-agent.md, "Settings"): the agent URLs it may call,
// the networks it may reach that are not public, and the agents it knows; with -agents, a
// definition's capabilities.a2a instead, these flags being its defaults.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/a2awebcap/a2awebcap/agent"
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/hosting"
	"github.com/a2awebcap/a2awebcap/x402"
)

// a2aConfig is the a2a capability's flags.
type a2aConfig struct {
	allow, networks, agents string
	self                    string // the server's -base-url, for the chains of calls
}

func (a *a2aConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&a.allow, "a2a-allow", envOr("A2AWEBCAP_A2A_ALLOW", ""),
		"a2a: the agent URL patterns it may call, comma-separated (https://agents.example/*) (A2AWEBCAP_A2A_ALLOW)")
	fs.StringVar(&a.networks, "a2a-networks", envOr("A2AWEBCAP_A2A_NETWORKS", ""),
		"a2a: CIDRs it may reach although they are not public, comma-separated (127.0.0.1/32 for agents of this host); empty: public addresses only (A2AWEBCAP_A2A_NETWORKS)")
	fs.StringVar(&a.agents, "a2a-agents", envOr("A2AWEBCAP_A2A_AGENTS", ""),
		"a2a: base URLs of agents it knows without a registry (for find and call by skill), comma-separated (A2AWEBCAP_A2A_AGENTS)")
}

// settings are the flags' settings.
func (a *a2aConfig) settings() (peer.Settings, error) {
	s := peer.Settings{Allow: list(a.allow), Networks: list(a.networks), Agents: list(a.agents)}
	data, _ := json.Marshal(s)
	return peer.ParseSettings(data) // checks them
}

// offer is the single agent's a2a offer (-capabilities a2a).
func (a *a2aConfig) offer() (capability.Offer, error) {
	if a.allow == "" {
		return capability.Offer{}, errors.New("-capabilities a2a needs -a2a-allow: the agent URLs it may call")
	}
	s, err := a.settings()
	if err != nil {
		return capability.Offer{}, fmt.Errorf("-a2a-*: %w", err)
	}
	return peer.Offer(s, &peer.Options{Self: a.self})
}

// hostedOffer is the a2a offer of a definition: its capabilities.a2a, else the flags'. Its
// payer's spending is kept in st when st keeps spending (the SQLite and PostgreSQL stores do),
// under the definition's name.
func (a *a2aConfig) hostedOffer(d *hosting.Definition, st agent.Store) (capability.Offer, error) {
	var s peer.Settings
	var err error
	switch {
	case d.Capabilities != nil && len(d.Capabilities.A2A) > 0:
		if s, err = peer.ParseSettings(d.Capabilities.A2A); err != nil {
			return capability.Offer{}, fmt.Errorf("capabilities.a2a: %w", err)
		}
	case a.allow != "":
		if s, err = a.settings(); err != nil {
			return capability.Offer{}, fmt.Errorf("-a2a-*: %w", err)
		}
	default:
		return capability.Offer{}, errors.New("needs capabilities.a2a (its allow), or the server's -a2a-allow: the agent URLs it may call")
	}
	var self string
	if a.self != "" {
		self = strings.TrimSuffix(a.self, "/") + "/agents/" + d.Name + "/"
	}
	var spent x402.Spending
	if sp, ok := st.(interface{ Spending(string) x402.Spending }); ok {
		spent = sp.Spending(d.Name)
	}
	return peer.Offer(s, &peer.Options{Self: self, Spending: spent})
}
