package x402

// The merchant: an executor wrapper that asks for payment before a priced task runs.
//
// Concurrency model. A Merchant holds no mutable state: everything a payment needs — the
// requirements offered, the request that is paid for, the receipts — is in the task, which the
// engine keeps and serializes per task. Each Execute runs on the engine's goroutine for that
// execution; the facilitator calls it makes block only that execution.

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// keyRequest is our metadata key, on the payment-required status message, naming the message
// whose task is paid for.
const keyRequest = "a2awebcap.x402/request"

// MerchantOptions configure NewMerchant.
type MerchantOptions struct {
	// Price returns what a new task costs: the requirements of which the client pays one, or
	// none for a free task (which goes straight to the agent). An error refuses the request.
	// Required.
	Price func(ctx context.Context, ec *a2asrv.ExecutorContext) ([]Requirements, error)
	// Facilitator verifies and settles payments. Required.
	Facilitator Facilitator
	// Resource fills the Resource of requirements that have none (the agent's URL, say).
	// Zero: "urn:a2a:task:" and the task's ID.
	Resource string
	// Logger logs refused and failed payments. Nil: slog.Default().
	Logger *slog.Logger
}

// Merchant wraps an agent executor so that priced tasks are paid before they run, per the A2A
// x402 extension's standalone flow (docs/payments.md). It implements engine.Recoverer and
// engine.Waker when the wrapped executor does (RecoverTask and SetWake delegate; a woken run,
// of a task the agent left waiting for input, goes to the agent as a follow-up does).
type Merchant struct {
	next a2asrv.AgentExecutor
	o    MerchantOptions
}

// NewMerchant wraps next. It panics without Price or Facilitator.
func NewMerchant(next a2asrv.AgentExecutor, opts *MerchantOptions) *Merchant {
	if opts == nil || opts.Price == nil || opts.Facilitator == nil {
		panic("x402: NewMerchant needs Price and Facilitator")
	}
	m := &Merchant{next: next, o: *opts}
	if m.o.Logger == nil {
		m.o.Logger = slog.Default()
	}
	return m
}

// Extension is the card's declaration of the x402 extension.
func Extension(required bool) a2a.AgentExtension {
	return a2a.AgentExtension{URI: ExtensionURI, Description: "Supports payments using the x402 protocol for on-chain settlement.", Required: required}
}

// Declare lists the extension on card (once), required or not: a required extension makes
// every binding refuse requests that do not activate it; otherwise only priced tasks need it.
func (m *Merchant) Declare(card *a2a.AgentCard, required bool) { Declare(card, required) }

// Declare lists the extension on card (once), required or not, as Merchant.Declare does.
func Declare(card *a2a.AgentCard, required bool) {
	exts := card.Capabilities.Extensions
	if i := slices.IndexFunc(exts, func(e a2a.AgentExtension) bool { return e.URI == ExtensionURI }); i >= 0 {
		exts[i] = Extension(required)
		return
	}
	card.Capabilities.Extensions = append(exts, Extension(required))
}

// Activated reports whether the request activated the extension (the A2A-Extensions service
// parameter names its URI).
func Activated(ec *a2asrv.ExecutorContext) bool {
	vals, _ := ec.ServiceParams.Get(a2a.SvcParamExtensions)
	for _, v := range vals {
		for uri := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(uri) == ExtensionURI {
				return true
			}
		}
	}
	return false
}

var errNotActivated = a2a.NewError(a2a.ErrExtensionSupportRequired,
	"this task is paid for with the x402 extension: activate it with the A2A-Extensions service parameter "+ExtensionURI)

// Execute implements a2asrv.AgentExecutor.
func (m *Merchant) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		st := ec.StoredTask
		if pr, waiting, err := RequiredOf(st); waiting {
			if err != nil { // we wrote it: a task that is not ours, or a bug
				yield(nil, fmt.Errorf("x402: task %s: %w", ec.TaskID, err))
				return
			}
			m.payment(ctx, ec, pr, yield)
			return
		}
		if st != nil {
			// A follow-up of a task that is not waiting for payment: the agent's, with the
			// receipts it has (if any) carried to its end.
			m.run(ctx, ec, ReceiptsOf(st), yield)
			return
		}
		reqs, err := m.o.Price(ctx, ec)
		if err != nil {
			yield(nil, err)
			return
		}
		if len(reqs) == 0 {
			m.run(ctx, ec, nil, yield)
			return
		}
		if !Activated(ec) {
			yield(nil, errNotActivated)
			return
		}
		activate(ctx)
		for i := range reqs {
			if reqs[i].Resource == "" {
				reqs[i].Resource = m.o.Resource
			}
			if reqs[i].Resource == "" {
				reqs[i].Resource = "urn:a2a:task:" + string(ec.TaskID)
			}
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		pr := &PaymentRequired{X402Version: Version, Error: "payment required", Accepts: reqs}
		yield(m.ask(ec, pr, ec.Message.ID, "Payment required: "+describe(reqs)), nil)
	}
}

// activate records in the call context that the extension was used, for bindings that echo it.
func activate(ctx context.Context) {
	if ext, ok := a2asrv.ExtensionsFrom(ctx); ok {
		e := Extension(false)
		ext.Activate(&e)
	}
}

// ask is the input-required status that asks for pr.
func (m *Merchant) ask(ec *a2asrv.ExecutorContext, pr *PaymentRequired, request string, text string) *a2a.TaskStatusUpdateEvent {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
	msg.Metadata = map[string]any{KeyStatus: string(StatusRequired), KeyRequired: toMeta(pr), keyRequest: request}
	return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg)
}

// describe says in words what requirements ask for.
func describe(reqs []Requirements) string {
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = fmt.Sprintf("%s of %s on %s to %s, for %s", r.MaxAmountRequired, r.Asset, r.Network, r.PayTo, strings.TrimSuffix(r.Description, "."))
	}
	return strings.Join(parts, "; or ") + ". Reply to this task with an x402 payment (x402.payment.status payment-submitted)."
}

// payment handles a message on a task waiting for payment pr.
func (m *Merchant) payment(ctx context.Context, ec *a2asrv.ExecutorContext, pr *PaymentRequired, yield func(a2a.Event, error) bool) {
	if !Activated(ec) {
		yield(nil, errNotActivated)
		return
	}
	activate(ctx)
	st := ec.StoredTask
	request, _ := st.Status.Message.Metadata[keyRequest].(string)
	switch StatusOf(ec.Message) {
	case StatusRejected:
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Payment declined: the task is canceled."))
		msg.Metadata = map[string]any{KeyStatus: string(StatusRejected)}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, msg), nil)
		return
	case StatusSubmitted:
	default:
		yield(m.ask(ec, pr, request, "Payment is still required: "+describe(pr.Accepts)), nil)
		return
	}
	payload, err := PayloadOf(ec.Message)
	if err != nil {
		m.fail(ec, CodeInvalidPayload, "", err.Error(), yield)
		return
	}
	req := match(pr.Accepts, payload)
	if req == nil {
		m.fail(ec, CodeInvalidPayload, payload.Network, fmt.Sprintf("the payment's scheme %q is none of the offered requirements'", payload.Scheme), yield)
		return
	}
	vr, err := m.o.Facilitator.Verify(ctx, payload, req)
	if err != nil {
		m.o.Logger.Warn("x402: the facilitator did not verify", "task", ec.TaskID, "err", err)
		m.fail(ec, CodeSettlementFailed, req.Network, "the payment could not be verified: the facilitator failed", yield)
		return
	}
	if !vr.IsValid {
		m.fail(ec, ErrorCode(vr.InvalidReason), req.Network, "payment verification failed: "+vr.InvalidReason, yield)
		return
	}
	if !yield(m.progress(ec, StatusVerified, "Payment verified; settling.", nil), nil) {
		return
	}
	sr, err := m.o.Facilitator.Settle(ctx, payload, req)
	if err != nil {
		m.o.Logger.Warn("x402: the facilitator did not settle", "task", ec.TaskID, "err", err)
		m.fail(ec, CodeSettlementFailed, req.Network, "the payment could not be settled: the facilitator failed", yield)
		return
	}
	if !sr.Success {
		m.fail(ec, ErrorCode(sr.ErrorReason), req.Network, "payment settlement failed: "+sr.ErrorReason, yield)
		return
	}
	receipts := append(ReceiptsOf(st), *sr)
	// The receipt is in the task before the skill runs: a payment is never lost from its record.
	if !yield(m.progress(ec, StatusCompleted, "Payment settled: "+sr.Transaction+".", receipts), nil) {
		return
	}
	paid := *ec
	paid.Message = requestMessage(st, request)
	task := *st
	task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking}
	paid.StoredTask = &task
	m.run(ctx, &paid, receipts, yield)
}

// match picks the offered requirement a payload pays: the same scheme, network and recipient;
// else the same scheme and network; else the same scheme (the facilitator then says what does
// not match). nil: none has its scheme.
func match(offered []Requirements, p *Payload) *Requirements {
	var network, scheme *Requirements
	for i := range offered {
		r := &offered[i]
		if r.Scheme != p.Scheme {
			continue
		}
		if scheme == nil {
			scheme = r
		}
		if r.Network != p.Network {
			continue
		}
		if strings.EqualFold(r.PayTo, p.Payload.Authorization.To) {
			return r
		}
		if network == nil {
			network = r
		}
	}
	if network != nil {
		return network
	}
	return scheme
}

// requestMessage finds the message a payment pays for in a task's history: the one the
// payment-required status names, else the first message of the user.
func requestMessage(t *a2a.Task, id string) *a2a.Message {
	var first *a2a.Message
	for _, m := range t.History {
		if m == nil || m.Role != a2a.MessageRoleUser {
			continue
		}
		if id != "" && m.ID == id {
			return m
		}
		if first == nil {
			first = m
		}
	}
	return first
}

// progress is a working status with the payment's state (and receipts).
func (m *Merchant) progress(ec *a2asrv.ExecutorContext, s Status, text string, receipts []Receipt) *a2a.TaskStatusUpdateEvent {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
	msg.Metadata = map[string]any{KeyStatus: string(s)}
	if receipts != nil {
		msg.Metadata[KeyReceipts] = toMeta(receipts)
	}
	return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg)
}

// fail ends the task failed for a refused payment.
func (m *Merchant) fail(ec *a2asrv.ExecutorContext, code, network, reason string, yield func(a2a.Event, error) bool) {
	m.o.Logger.Info("x402: payment refused", "task", ec.TaskID, "code", code, "reason", reason)
	receipts := append(ReceiptsOf(ec.StoredTask), Receipt{Success: false, ErrorReason: reason, Network: network})
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Payment failed ("+code+"): "+reason+"."))
	msg.Metadata = map[string]any{KeyStatus: string(StatusFailed), KeyError: code, KeyReceipts: toMeta(receipts)}
	yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg), nil)
}

// run runs the agent on ec, stamping its final (or interrupting) status with the receipts.
func (m *Merchant) run(ctx context.Context, ec *a2asrv.ExecutorContext, receipts []Receipt, yield func(a2a.Event, error) bool) {
	for ev, err := range m.next.Execute(ctx, ec) {
		if err == nil && len(receipts) > 0 {
			ev = stamp(ec, ev, receipts)
		}
		if !yield(ev, err) {
			return
		}
	}
}

// stamp adds the receipts to an event that ends or interrupts the task. A Message (the
// agent's answer without a task) becomes the completed status of the paid task.
func stamp(ec *a2asrv.ExecutorContext, ev a2a.Event, receipts []Receipt) a2a.Event {
	switch e := ev.(type) {
	case *a2a.TaskStatusUpdateEvent:
		if !ends(e.Status.State) {
			return ev
		}
		c := *e
		c.Status.Message = withReceipts(ec, e.Status.Message, e.Status.State, receipts)
		return &c
	case *a2a.Task:
		if !ends(e.Status.State) {
			return ev
		}
		c := *e
		c.Status.Message = withReceipts(ec, e.Status.Message, e.Status.State, receipts)
		return &c
	case *a2a.Message:
		c := *e
		c.TaskID, c.ContextID = ec.TaskID, ec.ContextID
		return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, withReceipts(ec, &c, a2a.TaskStateCompleted, receipts))
	}
	return ev
}

func ends(s a2a.TaskState) bool {
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// withReceipts returns a copy of msg (or a new agent message) whose metadata records the
// payment as completed, with the receipts.
func withReceipts(ec *a2asrv.ExecutorContext, msg *a2a.Message, state a2a.TaskState, receipts []Receipt) *a2a.Message {
	var c a2a.Message
	if msg != nil {
		c = *msg
	} else {
		c = *a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("The task is "+string(state)+"."))
	}
	meta := make(map[string]any, len(c.Metadata)+2)
	for k, v := range c.Metadata {
		meta[k] = v
	}
	meta[KeyStatus] = string(StatusCompleted)
	meta[KeyReceipts] = toMeta(receipts)
	c.Metadata = meta
	return &c
}

// Cancel implements a2asrv.AgentExecutor: a task waiting for payment is canceled here (the
// agent never saw it); any other goes to the agent.
func (m *Merchant) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	if _, waiting, _ := RequiredOf(ec.StoredTask); waiting {
		return func(yield func(a2a.Event, error) bool) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
		}
	}
	return m.next.Cancel(ctx, ec)
}

// recoverer is engine.Recoverer, without importing the engine.
type recoverer interface {
	RecoverTask(ctx context.Context, task *a2a.Task) ([]a2a.Event, error)
}

// RecoverTask implements engine.Recoverer by asking the wrapped executor, if it can answer.
func (m *Merchant) RecoverTask(ctx context.Context, task *a2a.Task) ([]a2a.Event, error) {
	if r, ok := m.next.(recoverer); ok {
		return r.RecoverTask(ctx, task)
	}
	return nil, nil
}

// waker is engine.Waker, without importing the engine.
type waker interface {
	SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error)
}

// SetWake implements engine.Waker by handing wake to the wrapped executor, if it takes one.
func (m *Merchant) SetWake(wake func(ctx context.Context, tenant string, user *a2asrv.User, task a2a.TaskID) error) {
	if w, ok := m.next.(waker); ok {
		w.SetWake(wake)
	}
}
