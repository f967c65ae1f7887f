package capability

// The audit log: what happened to a principal's capabilities, readable by that principal and
// by the operator.

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Outcome is what a record records.
type Outcome string

// The outcomes.
const (
	// OutcomeOK: a call ran and returned.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: a call ran and failed (its implementation's error), or could not run
	// (bad arguments, no such method or capability).
	OutcomeFailed Outcome = "failed"
	// OutcomeRefused: a call would have reached outside its contract.
	OutcomeRefused Outcome = "refused"
	// OutcomeDenied: the user refused an approval (Reason says why), or a call carried a
	// refused one.
	OutcomeDenied Outcome = "denied"
	// OutcomeApprovalRequired: a call waits for the user's decision (Pending names it).
	OutcomeApprovalRequired Outcome = "approval-required"
	// OutcomeApproved: the user approved (By) a call, a contract or an installation.
	OutcomeApproved Outcome = "approved"
	// OutcomeExhausted: a call found its budget spent.
	OutcomeExhausted Outcome = "exhausted"
	// OutcomeRevoked: a call found its capability revoked.
	OutcomeRevoked Outcome = "revoked"
	// OutcomeInstalled and OutcomeUninstalled: the capability entered or left the set.
	OutcomeInstalled   Outcome = "installed"
	OutcomeUninstalled Outcome = "uninstalled"
	// OutcomeStrategy: the capability's strategy changed (Strategy is the new one).
	OutcomeStrategy Outcome = "strategy"
)

// Record is one entry of the audit log.
type Record struct {
	// Seq orders records; the audit log assigns it.
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	Principal  string    `json:"principal"`
	Session    string    `json:"session,omitempty"`
	Capability string    `json:"capability"`
	Method     string    `json:"method,omitempty"`
	// Args are the call's arguments, canonical JSON cut to at most 1 KiB.
	Args     string   `json:"args,omitempty"`
	Strategy Strategy `json:"strategy,omitzero"`
	Origin   Origin   `json:"origin,omitzero"`
	Outcome  Outcome  `json:"outcome"`
	// Pending is the approval asked, decided or carried out.
	Pending string `json:"pending,omitempty"`
	// By is who decided an approval, installed or uninstalled.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Accessed are the resources the call asked for, "reads file:notes/a.txt", refusals
	// marked "(refused)".
	Accessed []string      `json:"accessed,omitempty"`
	Bytes    int64         `json:"bytes,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// maxRecordArgs bounds the arguments a record keeps.
const maxRecordArgs = 1024

func recordArgs(args json.RawMessage) string { return truncate(string(args), maxRecordArgs) }

// Data is r as flat strings, for an observation's data.
func (r Record) Data() map[string]string {
	d := map[string]string{"capability": r.Capability, "outcome": string(r.Outcome)}
	set := func(k, v string) {
		if v != "" {
			d[k] = v
		}
	}
	set("method", r.Method)
	set("args", r.Args)
	set("pending", r.Pending)
	set("by", r.By)
	set("reason", r.Reason)
	set("error", r.Error)
	set("origin", r.Origin.Kind)
	set("session", r.Session)
	if r.Strategy.Kind != "" {
		d["strategy"] = r.Strategy.String()
	}
	if r.Seq != 0 {
		d["seq"] = strconv.FormatInt(r.Seq, 10)
	}
	return d
}

// Text is r in words: "the user approved fs.write (p3)".
func (r Record) Text() string {
	what := r.Capability
	if r.Method != "" {
		what += "." + r.Method
	}
	by := cmpOr(r.By, "someone")
	var s string
	switch r.Outcome {
	case OutcomeApproved:
		s = by + " approved " + what
	case OutcomeDenied:
		s = by + " refused " + what
	case OutcomeInstalled:
		s = by + " installed " + what + " under " + r.Strategy.String()
	case OutcomeUninstalled:
		s = by + " uninstalled " + what
	case OutcomeStrategy:
		s = by + " set " + what + " to " + r.Strategy.String()
	default:
		s = what + ": " + string(r.Outcome)
	}
	if r.Pending != "" {
		s += " (" + r.Pending + ")"
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	} else if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// Audit keeps audit records. Implementations are safe for concurrent use.
type Audit interface {
	// Append adds r, assigning its Seq.
	Append(ctx context.Context, r Record) error
	// Records returns records q selects, oldest first.
	Records(ctx context.Context, q AuditQuery) ([]Record, error)
}

// AuditQuery selects audit records.
type AuditQuery struct {
	// Principal is whose records: a principal reads only its own. All reads every principal's
	// (the operator's view), and then Principal is ignored.
	Principal string
	All       bool
	// Capability, when set, keeps only that capability's records.
	Capability string
	// After keeps records with Seq > After.
	After int64
	// Limit is the most records returned, the latest ones; 0 means 100.
	Limit int
}

// MemoryAudit is an Audit in memory that keeps the last records of each principal.
type MemoryAudit struct {
	keep int
	mu   sync.Mutex // guards the fields below
	seq  int64
	by   map[string][]Record // principal -> records, oldest first
}

// NewMemoryAudit returns an audit log keeping the last keep records of each principal; keep
// <= 0 means 1000.
func NewMemoryAudit(keep int) *MemoryAudit {
	if keep <= 0 {
		keep = 1000
	}
	return &MemoryAudit{keep: keep, by: map[string][]Record{}}
}

// Append adds r.
func (a *MemoryAudit) Append(_ context.Context, r Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	r.Seq = a.seq
	r.Accessed = slices.Clone(r.Accessed)
	rs := append(a.by[r.Principal], r)
	if len(rs) >= 2*a.keep { // drop the oldest half at once: appending stays O(1) amortized
		rs = slices.Delete(rs, 0, len(rs)-a.keep)
	}
	a.by[r.Principal] = rs
	return nil
}

// Records returns the records q selects.
func (a *MemoryAudit) Records(_ context.Context, q AuditQuery) ([]Record, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	a.mu.Lock()
	var out []Record
	add := func(rs []Record) {
		rs = rs[max(len(rs)-a.keep, 0):] // the last keep only
		for _, r := range rs {
			if r.Seq > q.After && (q.Capability == "" || r.Capability == q.Capability) {
				out = append(out, r)
			}
		}
	}
	if q.All {
		for _, rs := range a.by {
			add(rs)
		}
	} else {
		add(a.by[q.Principal])
	}
	a.mu.Unlock()
	slices.SortFunc(out, func(x, y Record) int { return cmp.Compare(x.Seq, y.Seq) })
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	for i := range out {
		out[i].Accessed = slices.Clone(out[i].Accessed)
	}
	return out, nil
}
