package main

import (
	"github.com/a2awebcap/a2awebcap/agent/capability"
	"github.com/a2awebcap/a2awebcap/agent/peer"
	"github.com/a2awebcap/a2awebcap/hosting"
)

// configurePeers lets definitions offer the a2a capability (package agent/peer), each agent
// naming itself by its base URL, so that a call back to it is a loop.
// Secrets (the payer's key) are read through getenv.
func configurePeers(o *hosting.Options, s *System, getenv func(string) string) {
	o.A2A = func(def *hosting.Definition) (capability.Offer, error) {
		set, err := peer.ParseSettings(def.Capabilities.A2A)
		if err != nil {
			return capability.Offer{}, err
		}
		return peer.Offer(set, &peer.Options{Self: s.AgentURL(def.Name), Getenv: getenv})
	}
}
