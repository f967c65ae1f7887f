package binding_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/internal/a2atest"
)

// A tenant's task can be canceled and followed over gRPC: a2a-go's gRPC handler builds those
// two requests without the tenant the call named, and the binding puts it back.
func TestGRPCCancelAndSubscribeKeepTheTenant(t *testing.T) {
	t.Parallel()
	srv := a2atest.Start(t, nil)
	c, err := client.New(t.Context(), srv.URL, &client.Options{Binding: client.BindingGRPC})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Tenant: "acme",
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("wait k1")), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	var sub []a2a.Event
	subscribed := make(chan error, 1)
	go func() {
		for ev, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID, Tenant: "acme"}) {
			if err != nil {
				subscribed <- err
				return
			}
			sub = append(sub, ev)
		}
		subscribed <- nil
	}()
	a2atest.WaitTask(t, tenantGetter{c, "acme"}, task.ID, func(tk *a2a.Task) bool { return tk.Status.State == a2a.TaskStateWorking })
	got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID, Tenant: "acme"})
	if err != nil {
		t.Fatalf("CancelTask(tenant acme) = %v", err)
	}
	if got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask(tenant acme) state = %s, want canceled", got.Status.State)
	}
	if err := <-subscribed; err != nil {
		t.Fatalf("SubscribeToTask(tenant acme) = %v", err)
	}
	if a2atest.LastState(sub) != a2a.TaskStateCanceled {
		t.Errorf("SubscribeToTask(tenant acme) saw %v, want it to end canceled", a2atest.Kinds(sub))
	}
}

type tenantGetter struct {
	c      *client.Client
	tenant string
}

func (g tenantGetter) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	cp := *req
	cp.Tenant = g.tenant
	return g.c.GetTask(ctx, &cp)
}
