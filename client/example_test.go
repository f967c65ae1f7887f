package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2awebcap/a2awebcap/agents"
	"github.com/a2awebcap/a2awebcap/binding"
	"github.com/a2awebcap/a2awebcap/client"
	"github.com/a2awebcap/a2awebcap/engine"
	"github.com/a2awebcap/a2awebcap/store/memory"
)

func Example() {
	// An a2aWebCap server with the built-in agent: its card lists capnweb first.
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	eng := engine.New(&agents.Builtin{Tick: time.Millisecond}, st, nil)
	defer eng.Close(ctx)
	srv := httptest.NewServer(binding.NewHTTPHandler(eng, agents.Card("demo", "a demo agent", ""), nil))
	defer srv.Close()

	c, err := client.New(ctx, srv.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Destroy()
	fmt.Println("connected over", c.Binding())

	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo hello")),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reply:", res.(*a2a.Message).Parts[0].Text())

	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("wait 2")),
	}) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			fmt.Println("task", ev.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			fmt.Println("status", ev.Status.State)
		case *a2a.TaskArtifactUpdateEvent:
			fmt.Println("artifact", ev.Artifact.Name)
		}
	}

	_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
	fmt.Println("not found:", errors.Is(err, a2a.ErrTaskNotFound))
	// Output:
	// connected over capnweb
	// reply: hello
	// task TASK_STATE_SUBMITTED
	// status TASK_STATE_WORKING
	// status TASK_STATE_WORKING
	// status TASK_STATE_WORKING
	// artifact wait-result
	// status TASK_STATE_COMPLETED
	// not found: true
}
