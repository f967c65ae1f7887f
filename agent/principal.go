package agent

import "github.com/a2aproject/a2a-go/v2/a2asrv"

// Principal is who an instance belongs to: a tenant and an authenticated user name. The zero
// Name is the anonymous principal: every caller that did not authenticate (all of them, on a
// server with no authentication configured) shares the anonymous instance of its tenant.
type Principal struct {
	Tenant string `json:"tenant,omitempty"`
	Name   string `json:"name,omitempty"`
}

// Anonymous reports whether p is the anonymous principal of its tenant.
func (p Principal) Anonymous() bool { return p.Name == "" }

// String is "name@tenant", "name", "anonymous@tenant" or "anonymous".
func (p Principal) String() string {
	s := p.Name
	if s == "" {
		s = "anonymous"
	}
	if p.Tenant != "" {
		s += "@" + p.Tenant
	}
	return s
}

// PrincipalOf returns the principal an A2A call runs for: its tenant and, when the caller
// authenticated, the user's name. It is the owner the engine scopes tasks by.
func PrincipalOf(ec *a2asrv.ExecutorContext) Principal {
	if ec == nil {
		return Principal{}
	}
	p := Principal{Tenant: ec.Tenant}
	if ec.User != nil && ec.User.Authenticated {
		p.Name = ec.User.Name
	}
	return p
}
