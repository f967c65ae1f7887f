package agent

// Human approval: a proposal that touches a rule whose action is in Limits.Approval is held as a
// Review after its checks pass, and applied only when a human approves it. Reviews are the
// agent's state like the rest (core.reviews, owned by the agent's goroutine) and saved in its
// store whenever they change.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReviewStatus is where a held proposal stands.
type ReviewStatus string

// The review statuses.
const (
	// ReviewPending: waiting for a human; it counts toward nothing.
	ReviewPending ReviewStatus = "pending"
	// ReviewApproved: applied as policy version Review.Version.
	ReviewApproved ReviewStatus = "approved"
	// ReviewRejected: never applied.
	ReviewRejected ReviewStatus = "rejected"
)

// Review is a proposal held for a human's approval, and what became of it.
type Review struct {
	// ID names the review in the agent: "r1", "r2", …
	ID       string       `json:"id"`
	Proposal Proposal     `json:"proposal"`
	Status   ReviewStatus `json:"status"`
	// Base is the policy version in force when it was proposed; approval re-checks it against
	// the version in force then.
	Base     int       `json:"base"`
	Proposed time.Time `json:"proposed"`
	// Reviewer is who approved or rejected it; Reason is why it was rejected.
	Reviewer string    `json:"reviewer,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Decided  time.Time `json:"decided,omitzero"`
	// Version is the policy version its approval made; 0 unless approved.
	Version int `json:"version,omitempty"`
}

func (r Review) clone() Review {
	r.Proposal = r.Proposal.clone()
	return r
}

func (p Proposal) clone() Proposal {
	p.Rule = cloneRules([]Rule{p.Rule})[0]
	p.Evidence = slices.Clone(p.Evidence)
	return p
}

// Errors of [Agent.Approve] and [Agent.Reject].
var (
	// ErrNoReview: no review has that ID.
	ErrNoReview = errors.New("agent: no such review")
	// ErrReviewed: the review was already approved or rejected.
	ErrReviewed = errors.New("agent: review already decided")
)

// needsApproval reports whether p adds, writes, replaces or removes a rule whose action is in
// the policy's Limits.Approval.
func (c *core) needsApproval(p Proposal) bool {
	src := c.versions[c.current].src
	gated := src.Limits.Approval
	if len(gated) == 0 {
		return false
	}
	if p.Op != OpRemove && slices.Contains(gated, p.Rule.Action) {
		return true
	}
	i := slices.IndexFunc(src.Rules, func(r Rule) bool { return r.Name == p.Rule.Name })
	return i >= 0 && slices.Contains(gated, src.Rules[i].Action)
}

// hold saves p, which passed its checks, as a pending review.
func (c *core) hold(ctx context.Context, p Proposal, d Decision) (Decision, error) {
	r := Review{ID: "r" + strconv.Itoa(len(c.reviews)+1), Proposal: p.clone(), Status: ReviewPending,
		Base: c.current + 1, Proposed: c.def.now().UTC()}
	if err := c.commit(ctx, &Batch{Reviews: []Review{r}}); err != nil {
		return d, fmt.Errorf("agent: saving review %s: %w", r.ID, err)
	}
	c.reviews = append(c.reviews, r)
	d.Version, d.Pending = c.current+1, r.ID
	return d, nil
}

// Approve applies the held proposal id as a new policy version recorded with approver. It first
// re-runs every check of [Agent.Propose] against the policy in force now; if one fails, its
// error (wrapping ErrRejected) is returned and the review stays pending. An unknown id is
// ErrNoReview, one already decided ErrReviewed.
func (a *Agent) Approve(ctx context.Context, id, approver string) (Decision, error) {
	return call(ctx, a, func(c *core) (Decision, error) {
		ctx := context.WithoutCancel(ctx) // once taken, the approval is saved whole
		i, err := c.pending(id, approver)
		if err != nil {
			return Decision{Version: c.current + 1}, err
		}
		r := c.reviews[i].clone()
		d, cp, err := c.check(ctx, r.Proposal)
		if err != nil {
			return d, err
		}
		r.Status, r.Reviewer, r.Decided, r.Version = ReviewApproved, approver, c.def.now().UTC(), len(c.versions)+1
		if d, err = c.apply(ctx, r.Proposal, cp, d, &r); err != nil { // saves the review with the version
			return d, err
		}
		c.reviews[i] = r
		return d, nil
	})
}

// Reject records that approver refused the held proposal id, and why; it is never applied. An
// unknown id is ErrNoReview, one already decided ErrReviewed.
func (a *Agent) Reject(ctx context.Context, id, approver, reason string) (Review, error) {
	return call(ctx, a, func(c *core) (Review, error) {
		ctx := context.WithoutCancel(ctx)
		if strings.TrimSpace(reason) == "" {
			return Review{}, fmt.Errorf("agent: rejecting %s: no reason", id)
		}
		i, err := c.pending(id, approver)
		if err != nil {
			return Review{}, err
		}
		r := c.reviews[i].clone()
		r.Status, r.Reviewer, r.Reason, r.Decided = ReviewRejected, approver, reason, c.def.now().UTC()
		if err := c.commit(ctx, &Batch{Reviews: []Review{r}}); err != nil {
			return Review{}, fmt.Errorf("agent: saving review %s: %w", r.ID, err)
		}
		c.reviews[i] = r
		return r.clone(), nil
	})
}

// pending returns the index of the pending review id, for a decision by reviewer.
func (c *core) pending(id, reviewer string) (int, error) {
	if strings.TrimSpace(reviewer) == "" {
		return 0, fmt.Errorf("agent: deciding %s: no reviewer named", id)
	}
	i := slices.IndexFunc(c.reviews, func(r Review) bool { return r.ID == id })
	if i < 0 {
		return 0, fmt.Errorf("%w: %q", ErrNoReview, id)
	}
	if r := c.reviews[i]; r.Status != ReviewPending {
		return 0, fmt.Errorf("%w: %s was %s by %s", ErrReviewed, id, r.Status, r.Reviewer)
	}
	return i, nil
}
