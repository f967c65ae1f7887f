package session

import (
	"context"
	"errors"
	"fmt"
)

// ExtensionURI names the sessions extension of A2A that the bindings serve
// (docs/sessions.md, "On every binding").
const ExtensionURI = "urn:a2awebcap:sessions:v1"

// ErrNotFound: the caller has no session with that ID. A session of another principal is not
// found either: nothing tells it apart from one that never existed.
var ErrNotFound = errors.New("session: no such session")

// Service serves the sessions extension: the affordances of the caller's sessions. Every method
// acts for the caller the context carries (the a2asrv.CallContext's User, with the request's
// Tenant: the principal the engine scopes tasks by), on that principal's sessions only. The
// errors are this package's: ErrNotFound, a *StateError, ErrInvalid, ErrNothing.
type Service interface {
	ListSessions(ctx context.Context, req *ListRequest) (*ListResponse, error)
	GetSessionMetrics(ctx context.Context, req *Ref) (*Metrics, error)
	GetSessionHistory(ctx context.Context, req *HistoryRequest) (*History, error)
	GetSessionContext(ctx context.Context, req *Ref) (*Window, error)
	ResetSession(ctx context.Context, req *Ref) (*Metrics, error)
	ForkSession(ctx context.Context, req *ForkRequest) (*Metrics, error)
	MergeSession(ctx context.Context, req *MergeRequest) (*Metrics, error)
}

// Ref names one of the caller's sessions.
type Ref struct {
	Tenant    string `json:"tenant,omitempty"`
	ContextID string `json:"contextId"`
}

// ListRequest asks for the caller's sessions, a page at a time.
type ListRequest struct {
	Tenant    string `json:"tenant,omitempty"`
	PageSize  int    `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// ListResponse is a page of sessions, most recently updated first.
type ListResponse struct {
	Sessions      []Metrics `json:"sessions"`
	NextPageToken string    `json:"nextPageToken,omitempty"`
}

// HistoryRequest asks for a page of a session's turns ([Session.History]).
type HistoryRequest struct {
	Tenant    string `json:"tenant,omitempty"`
	ContextID string `json:"contextId"`
	From      int    `json:"from,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// ForkRequest forks a session after turn Turn (nil: its last) into NewContextID ("" for a new
// ID the service chooses).
type ForkRequest struct {
	Tenant       string `json:"tenant,omitempty"`
	ContextID    string `json:"contextId"`
	Turn         *int   `json:"turn,omitempty"`
	NewContextID string `json:"newContextId,omitempty"`
}

// MergeRequest folds session From into session ContextID, by Mode.
type MergeRequest struct {
	Tenant    string    `json:"tenant,omitempty"`
	ContextID string    `json:"contextId"`
	From      string    `json:"from"`
	Mode      MergeMode `json:"mode"`
}

func checkRef(id string) error {
	if id == "" || len(id) > maxID {
		return fmt.Errorf("%w: contextId must have 1 to %d bytes", ErrInvalid, maxID)
	}
	return nil
}

// Validate reports what is wrong with r, wrapping ErrInvalid.
func (r *Ref) Validate() error { return checkRef(r.ContextID) }

// Validate reports what is wrong with r, wrapping ErrInvalid.
func (r *ListRequest) Validate() error {
	if r.PageSize < 0 || r.PageSize > MaxHistoryLimit {
		return fmt.Errorf("%w: pageSize %d is not between 0 and %d", ErrInvalid, r.PageSize, MaxHistoryLimit)
	}
	return nil
}

// Validate reports what is wrong with r, wrapping ErrInvalid.
func (r *HistoryRequest) Validate() error {
	if r.From < 0 || r.Limit < 0 {
		return fmt.Errorf("%w: from and limit must not be negative", ErrInvalid)
	}
	return checkRef(r.ContextID)
}

// Validate reports what is wrong with r, wrapping ErrInvalid.
func (r *ForkRequest) Validate() error {
	if r.Turn != nil && *r.Turn < 0 {
		return fmt.Errorf("%w: turn %d is negative", ErrInvalid, *r.Turn)
	}
	if len(r.NewContextID) > maxID {
		return fmt.Errorf("%w: newContextId is over %d bytes", ErrInvalid, maxID)
	}
	return checkRef(r.ContextID)
}

// Validate reports what is wrong with r, wrapping ErrInvalid.
func (r *MergeRequest) Validate() error {
	if r.Mode != MergeTurns && r.Mode != MergeSummary {
		return fmt.Errorf("%w: mode %q is not %q or %q", ErrInvalid, r.Mode, MergeTurns, MergeSummary)
	}
	if err := checkRef(r.From); err != nil {
		return fmt.Errorf("%w (from)", err)
	}
	return checkRef(r.ContextID)
}
