package codec

// The fairness of ClaimDeliveries (store.ClaimQuery), shared by the three stores: each
// counts the deliveries under lease by owner and destination (Busy), reads the due deliveries
// in due order, leaving out those of the owners and destinations the counts already fill
// (Saturated), and lets a Claimer choose among them (Pick).
//
// A claim costs the deliveries it reads past: those of saturated owners and destinations due
// earlier are left out by the store's query, which reads them from an index without decoding
// anything, and only CandidateLimit of the rest are read into a Claimer.

import (
	"cmp"
	"slices"

	"github.com/a2awebcap/a2awebcap/store"
)

// ClaimKey is what ClaimQuery.PerDestination counts by: an owner and a destination.
type ClaimKey struct {
	Tenant, Principal, Dest string
}

func (k ClaimKey) owner() store.Owner { return store.Owner{Tenant: k.Tenant, Principal: k.Principal} }

// Candidate is a due delivery a claim may take, in due order; Ref is the store's handle on it.
type Candidate[R any] struct {
	Key ClaimKey
	Ref R
}

// Claimer chooses the deliveries of one claim.
type Claimer struct {
	q        store.ClaimQuery
	perDest  int64
	perOwner int64
	keys     map[ClaimKey]int64    // under lease, and chosen
	owners   map[store.Owner]int64 // under lease, and chosen
}

// NewClaimer returns the Claimer of a claim, given how many deliveries each owner and
// destination has under lease.
func NewClaimer(q store.ClaimQuery, busy map[ClaimKey]int64) *Claimer {
	perDest, perOwner, _ := CheckClaim(q)
	c := &Claimer{q: q, perDest: perDest, perOwner: perOwner, keys: map[ClaimKey]int64{}, owners: map[store.Owner]int64{}}
	for k, n := range busy {
		c.keys[k] += n
		c.owners[k.owner()] += n
	}
	return c
}

// Saturated returns the owners and the owner-destination pairs whose deliveries under lease
// fill a bound: the store leaves their due deliveries out of the candidates.
func (c *Claimer) Saturated() (keys []ClaimKey, owners []store.Owner) {
	for k, n := range c.keys {
		if n >= c.perDest {
			keys = append(keys, k)
		}
	}
	for o, n := range c.owners {
		if n >= c.perOwner {
			owners = append(owners, o)
		}
	}
	return keys, owners
}

// CandidateLimit is how many candidates a store reads for a claim: enough that owners and
// destinations the bounds stop early do not leave the claim short, in the common case.
func CandidateLimit(q store.ClaimQuery) int { return max(4*q.Limit, 64) }

// Pick returns the candidates (given in due order) the claim takes, in the order it takes
// them: within the bounds, and by turns — each owner's first before any owner's second,
// counting what the owner has under lease — then in due order; at most q.Limit.
func Pick[R any](c *Claimer, cands []Candidate[R]) []Candidate[R] {
	type chosen struct {
		i    int
		turn int64
	}
	var out []chosen
	for i, cd := range cands {
		o := cd.Key.owner()
		if c.keys[cd.Key] >= c.perDest || c.owners[o] >= c.perOwner {
			continue
		}
		c.keys[cd.Key]++
		c.owners[o]++
		out = append(out, chosen{i, c.owners[o]})
	}
	slices.SortStableFunc(out, func(a, b chosen) int { return cmp.Compare(a.turn, b.turn) })
	picked := make([]Candidate[R], 0, min(len(out), c.q.Limit))
	for _, ch := range out[:min(len(out), c.q.Limit)] {
		picked = append(picked, cands[ch.i])
	}
	return picked
}
