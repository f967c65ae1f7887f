package agent

// The operator's meta level over a Host's instances (docs/sessions.md, "The operator"): list the
// principals that have an instance, view an instance's policy versions and the proposals held
// for approval, approve, reject, roll back — for the operators only.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Operator is the meta level of a Host's instances, open to the principals named as operators:
// what binding.Options.Operator serves. Each method checks that the caller (the
// a2asrv.CallContext's authenticated user) is an operator, and acts on the instance of the
// principal (tenant, name) it names. Its errors are A2A errors: a2a.ErrUnauthorized for anyone
// else, a2a.ErrInvalidParams for a principal without an instance or a review it does not have,
// a2a.ErrUnsupportedOperation for what the instance refuses now (a review already decided, a
// re-check that fails, no version to roll back to).
type Operator struct {
	h         *Host
	operators []string
}

// Operator returns the meta level of h for operators, the authenticated user names allowed.
// With none, nobody is an operator.
func (h *Host) Operator(operators []string) *Operator {
	return &Operator{h: h, operators: slices.Clone(operators)}
}

// operator returns the calling operator's name, or why the caller is not one.
func (o *Operator) operator(ctx context.Context) (string, error) {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok || cc.User == nil || !cc.User.Authenticated || !slices.Contains(o.operators, cc.User.Name) {
		return "", a2a.NewError(a2a.ErrUnauthorized, "only the server's operators may do this")
	}
	return cc.User.Name, nil
}

// target checks that the caller is an operator and returns its name with the handle of
// principal (tenant, name)'s instance, which must exist.
func (o *Operator) target(ctx context.Context, tenant, name string) (string, *Agent, error) {
	op, err := o.operator(ctx)
	if err != nil {
		return "", nil, err
	}
	ps, err := o.h.store.Instances(ctx, o.h.def.name)
	if err != nil {
		return "", nil, err
	}
	p := Principal{Tenant: tenant, Name: name}
	if !slices.Contains(ps, p) {
		return "", nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("%s has no instance of %s", p, o.h.def.name))
	}
	return op, &Agent{name: o.h.def.name, h: o.h, p: p}, nil
}

// metaError is err as the operator is told it.
func metaError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoReview):
		return a2a.NewError(a2a.ErrInvalidParams, err.Error())
	case errors.Is(err, ErrReviewed), errors.Is(err, ErrRejected), errors.Is(err, ErrNoHistory):
		return a2a.NewError(a2a.ErrUnsupportedOperation, err.Error())
	}
	return err
}

// ListInstances lists the principals that have an instance, in the order they first committed;
// only those of tenant when it is not "".
func (o *Operator) ListInstances(ctx context.Context, tenant string) (any, error) {
	if _, err := o.operator(ctx); err != nil {
		return nil, err
	}
	ps, err := o.h.store.Instances(ctx, o.h.def.name)
	if err != nil {
		return nil, err
	}
	out := []map[string]string{}
	for _, p := range ps {
		if tenant == "" || p.Tenant == tenant {
			out = append(out, map[string]string{"tenant": p.Tenant, "name": p.Name})
		}
	}
	return map[string]any{"instances": out}, nil
}

// GetPolicy is an instance's meta level: the version in force, every version with the proposal
// that made it, and every review, pending or decided.
func (o *Operator) GetPolicy(ctx context.Context, tenant, name string) (any, error) {
	_, a, err := o.target(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	v, err := a.View(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"current": v.Version, "versions": nonNilSlice(v.History), "reviews": nonNilSlice(v.Reviews)}, nil
}

// ApproveProposal approves review on the instance, in the operator's name (Agent.Approve).
func (o *Operator) ApproveProposal(ctx context.Context, tenant, name, review string) (any, error) {
	op, a, err := o.target(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	d, err := a.Approve(ctx, review, op)
	if err != nil {
		return nil, metaError(err)
	}
	return map[string]any{"version": d.Version}, nil
}

// RejectProposal rejects review on the instance, in the operator's name, for reason.
func (o *Operator) RejectProposal(ctx context.Context, tenant, name, review, reason string) (any, error) {
	op, a, err := o.target(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	r, err := a.Reject(ctx, review, op, reason)
	if err != nil {
		return nil, metaError(err)
	}
	return map[string]any{"review": r}, nil
}

// RollbackPolicy returns the instance to its policy version before the current one.
func (o *Operator) RollbackPolicy(ctx context.Context, tenant, name string) (any, error) {
	_, a, err := o.target(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	v, err := a.Rollback(ctx)
	if err != nil {
		return nil, metaError(err)
	}
	return map[string]any{"version": v}, nil
}

func nonNilSlice[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
