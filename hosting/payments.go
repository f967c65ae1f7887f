package hosting

// Priced skills (docs/multi-agent.md, "Priced skills"; x402, docs/payments.md): a definition's
// payments say what its skills cost and whom to pay; New wraps the agent's executor in an
// x402.Merchant that asks a new task of a priced skill for payment, has the facilitator verify
// and settle it, and only then lets the agent work; the card declares the extension.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/x402"
	"github.com/a2awebcap/a2awebcap/x402/evm"
)

// AnySkill is the skill of a price that every new task of the agent pays.
const AnySkill = "*"

// Payments price a definition's skills.
type Payments struct {
	// PayTo is the address paid (an EVM address). Required.
	PayTo string `json:"payTo"`
	// Facilitator is the base URL of the x402 facilitator that verifies and settles payments
	// (its /verify and /settle). "": the server's (Options.Facilitator, serve's
	// -x402-facilitator).
	Facilitator string `json:"facilitator,omitempty"`
	// Required marks the extension required on the card: every request must activate it,
	// priced or not. False: only priced tasks need it.
	Required bool `json:"required,omitempty"`
	// Prices are what skills cost, at most one per skill. Required.
	Prices []Price `json:"prices"`
}

// Price is what a new task of a skill costs: Amount atomic units (a decimal string) of the
// token Asset (its contract) on Network, a token x402 knows (x402.Assets: USDC on base and
// base-sepolia).
type Price struct {
	// Skill is the id of a skill of the card whose messages are priced (a rule's name), or
	// AnySkill ("*"): every new task.
	Skill   string `json:"skill"`
	Amount  string `json:"amount"`
	Network string `json:"network"`
	Asset   string `json:"asset"`
}

// check checks p alone.
func (p *Payments) check() error {
	if a, err := evm.ParseAddress(p.PayTo); err != nil || a.IsZero() {
		return fmt.Errorf("payments.payTo: %q is not an EVM address", p.PayTo)
	}
	if p.Facilitator != "" && !httpURL(p.Facilitator) {
		return fmt.Errorf("payments.facilitator: %q is not an http(s) URL", p.Facilitator)
	}
	if len(p.Prices) == 0 {
		return errors.New("payments.prices: required: what the skills cost")
	}
	seen := map[string]bool{}
	for i, pr := range p.Prices {
		switch {
		case pr.Skill == "":
			return fmt.Errorf("payments.prices %d: skill: required (a skill's id, or \"*\")", i+1)
		case seen[pr.Skill]:
			return fmt.Errorf("payments.prices: skill %q twice", pr.Skill)
		case !positive(pr.Amount):
			return fmt.Errorf("payments.prices %d: amount %q: want a positive decimal amount of atomic units", i+1, pr.Amount)
		}
		if _, ok := x402.AssetOf(pr.Network, pr.Asset); !ok {
			var known []string
			for _, a := range x402.Assets {
				known = append(known, a.Network+" "+a.Address)
			}
			return fmt.Errorf("payments.prices %d: no known token %q on network %q (known: %s)", i+1, pr.Asset, pr.Network, strings.Join(known, ", "))
		}
		seen[pr.Skill] = true
	}
	return nil
}

// positive reports whether s is a decimal amount a payer can pay: above zero, at most a uint256.
func positive(s string) bool {
	if strings.Trim(s, "0123456789") != "" { // no hex, signs or spaces
		return false
	}
	n, err := evm.ParseInt(s)
	return err == nil && n.Sign() > 0 && n.BitLen() <= 256
}

// priced is what a new task of one skill costs: the messages of the skill (its examples, each
// without the "…" that says the rule reads the rest) or of every skill.
type priced struct {
	forms []string // lower-cased
	all   bool
	req   x402.Requirements
}

// merchant is a priced agent's merchant options, for its executor, made by build.
func merchant(d *Definition, skills []a2a.AgentSkill, o *Options) (*x402.MerchantOptions, error) {
	p := d.Payments
	if p == nil {
		return nil, nil
	}
	url := p.Facilitator
	if url == "" {
		url = o.Facilitator
	}
	if url == "" {
		return nil, errors.New("payments: needs payments.facilitator, or the server's -x402-facilitator: the x402 facilitator that verifies and settles payments")
	}
	var prices []priced
	for _, pr := range p.Prices {
		asset, _ := x402.AssetOf(pr.Network, pr.Asset) // checked by Check
		if pr.Skill == AnySkill {
			prices = append(prices, priced{all: true, req: x402.Exact(asset, p.PayTo, pr.Amount, cmp.Or(d.Description, "a task of "+d.Name))})
			continue
		}
		i := slices.IndexFunc(skills, func(s a2a.AgentSkill) bool { return s.ID == pr.Skill })
		if i < 0 {
			return nil, fmt.Errorf("payments.prices: %q is not a skill of the agent (its skills: %s)", pr.Skill, skillIDs(skills))
		}
		sk := skills[i]
		if len(sk.Examples) == 0 {
			return nil, fmt.Errorf("payments.prices: skill %q has no message forms to price (its rules recognize none); price \"*\" instead", pr.Skill)
		}
		x := priced{req: x402.Exact(asset, p.PayTo, pr.Amount, sk.Description)}
		for _, ex := range sk.Examples {
			x.forms = append(x.forms, strings.ToLower(strings.TrimSuffix(ex, " …")))
		}
		prices = append(prices, x)
	}
	return &x402.MerchantOptions{Price: priceOf(prices), Facilitator: x402.NewFacilitatorClient(url, o.FacilitatorOptions)}, nil
}

func skillIDs(skills []a2a.AgentSkill) string {
	ids := make([]string, len(skills))
	for i, s := range skills {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

// priceOf is the merchant's Price: the requirements of the first price whose skill the new
// task's message is a form of, else none (free). A message is a form of an example when, case
// folded and its spaces collapsed, it begins with the example: a rule that compares the command
// word matches whatever follows it, and one that tests text.startsWith whatever follows the
// prefix, space or not. A message that only looks like a form is charged: it never runs free.
func priceOf(prices []priced) func(context.Context, *a2asrv.ExecutorContext) ([]x402.Requirements, error) {
	return func(_ context.Context, ec *a2asrv.ExecutorContext) ([]x402.Requirements, error) {
		text := strings.ToLower(strings.Join(strings.Fields(agents.MessageText(ec.Message)), " "))
		for _, p := range prices {
			if p.all || slices.ContainsFunc(p.forms, func(f string) bool { return strings.HasPrefix(text, f) }) {
				return []x402.Requirements{p.req}, nil
			}
		}
		return nil, nil
	}
}
