package client

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2awebcap/a2awebcap/capnweb"
	"github.com/a2awebcap/a2awebcap/internal/wire"
)

// oddAgent answers getTask with values a conforming server does not send, but a client must
// still read: nothing (undefined), and a task with a date and bytes in it (which JSON has no form
// for, so the result is read as a tree and converted as ProtoJSON writes them).
type oddAgent struct{ capnweb.Target }

func (oddAgent) GetTask(request, params any) any {
	m, _ := wire.Fields(request)
	if m["id"] == "nothing" {
		return capnweb.Undefined
	}
	return map[string]any{"id": m["id"], "contextId": "c", "status": map[string]any{
		"state": "TASK_STATE_COMPLETED", "timestamp": time.UnixMilli(1700000000000)},
		"metadata": map[string]any{"blob": []byte("hi")}}
}

// The capnweb transport reads results as JSON where it can and as trees where it must, and an
// undefined result is the zero value, over a WebSocket and in a batch.
func TestCapnwebResults(t *testing.T) {
	t.Parallel()
	h := capnweb.NewHandler(func(*http.Request) (any, error) { return oddAgent{}, nil }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })
	for _, batch := range []bool{false, true} {
		tr, err := newCapnwebTransport(t.Context(), srv.URL, &CapnwebOptions{Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Destroy() })
		task, err := tr.GetTask(t.Context(), a2aclient.ServiceParams{}, &a2a.GetTaskRequest{ID: "t1"})
		if err != nil {
			t.Fatalf("batch %v: GetTask() = %v", batch, err)
		}
		if task.ID != "t1" || task.Status.State != a2a.TaskStateCompleted || task.Status.Timestamp == nil ||
			!task.Status.Timestamp.Equal(time.UnixMilli(1700000000000)) || task.Metadata["blob"] != "aGk=" {
			t.Errorf("batch %v: GetTask() = %+v (status %+v, metadata %v)", batch, task, task.Status, task.Metadata)
		}
		task, err = tr.GetTask(t.Context(), a2aclient.ServiceParams{}, &a2a.GetTaskRequest{ID: "nothing"})
		if err != nil || task == nil || task.ID != "" {
			t.Errorf("batch %v: GetTask() of nothing = %+v, %v; want the zero task", batch, task, err)
		}
	}
}
