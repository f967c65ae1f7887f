package binding

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/a2awebcap/a2awebcap/capnweb"
)

// pushPage is one page of ListTaskPushNotificationConfigs as a binding answered it.
type pushPage struct {
	ids   []string
	token string
}

// pushLister lists one page over one binding; a failed call is returned as its error's text
// and A2A code (JSON-RPC code, HTTP status, gRPC code).
type pushLister func(t *testing.T, task string, size int, token string) (pushPage, int)

func pageOf(t *testing.T, body []byte) pushPage {
	t.Helper()
	var res struct {
		Configs []struct {
			ID string `json:"id"`
		} `json:"configs"`
		NextPageToken string `json:"nextPageToken"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("list result %s: %v", body, err)
	}
	p := pushPage{token: res.NextPageToken}
	for _, c := range res.Configs {
		p.ids = append(p.ids, c.ID)
	}
	return p
}

// TestPushConfigPagesOnEveryBinding: pageSize and pageToken are honoured, and nextPageToken
// returned, by JSON-RPC, HTTP+JSON, gRPC and capnweb (WebSocket and HTTP batch); a negative
// pageSize is INVALID_PARAMS on each.
func TestPushConfigPagesOnEveryBinding(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	rpc, rest := ts.baseURL+DefaultJSONRPCPath, ts.baseURL+DefaultRESTPath
	gconn, err := grpc.NewClient(ts.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gconn.Close() })
	gclient := a2apb.NewA2AServiceClient(gconn)
	ws := ts.dialCapnweb(t, "", nil)
	capnwebList := func(main *capnweb.Stub, task string, size int, token string) (pushPage, int) {
		req := map[string]any{"taskId": task}
		if size != 0 {
			req["pageSize"] = size
		}
		if token != "" {
			req["pageToken"] = token
		}
		var res a2a.ListTaskPushConfigResponse
		if err := awaitInto(t.Context(), main.Call("listTaskPushNotificationConfigs", req), &res); err != nil {
			code, _ := a2aErr(t, err)
			return pushPage{}, int(code)
		}
		p := pushPage{token: res.NextPageToken}
		for _, c := range res.Configs {
			p.ids = append(p.ids, c.ID)
		}
		return p, 0
	}
	listers := map[string]pushLister{
		"JSONRPC": func(t *testing.T, task string, size int, token string) (pushPage, int) {
			params := map[string]any{"taskId": task, "pageSize": size}
			if token != "" {
				params["pageToken"] = token
			}
			r := do(t, "POST", rpc, jsonrpcBody("ListTaskPushNotificationConfigs", params))
			var env struct {
				Result json.RawMessage     `json:"result"`
				Error  *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal(r.body, &env); err != nil {
				t.Fatalf("JSON-RPC answer %s: %v", r.body, err)
			}
			if env.Error != nil {
				return pushPage{}, env.Error.Code
			}
			return pageOf(t, env.Result), 0
		},
		"HTTP+JSON": func(t *testing.T, task string, size int, token string) (pushPage, int) {
			q := url.Values{"pageSize": {fmt.Sprint(size)}}
			if token != "" {
				q.Set("pageToken", token)
			}
			r := do(t, "GET", rest+"/tasks/"+url.PathEscape(task)+"/pushNotificationConfigs?"+q.Encode(), nil)
			if r.status != 200 {
				return pushPage{}, r.status
			}
			return pageOf(t, r.body), 0
		},
		"gRPC": func(t *testing.T, task string, size int, token string) (pushPage, int) {
			res, err := gclient.ListTaskPushNotificationConfigs(t.Context(), &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: task, PageSize: int32(size), PageToken: token})
			if err != nil {
				return pushPage{}, int(status.Code(err))
			}
			p := pushPage{token: res.GetNextPageToken()}
			for _, c := range res.GetConfigs() {
				p.ids = append(p.ids, c.GetId())
			}
			return p, 0
		},
		"capnweb": func(t *testing.T, task string, size int, token string) (pushPage, int) {
			return capnwebList(ws.Main(), task, size, token)
		},
		"capnweb-batch": func(t *testing.T, task string, size int, token string) (pushPage, int) {
			s := capnweb.NewBatchSession(ts.baseURL+DefaultCapnwebPath, nil, nil)
			defer s.Close()
			return capnwebList(s.Main(), task, size, token)
		},
	}
	invalid := map[string]int{"JSONRPC": -32602, "HTTP+JSON": 400, "gRPC": int(codes.InvalidArgument), "capnweb": -32602, "capnweb-batch": -32602}

	ctx := t.Context()
	res, err := ts.handler.SendMessage(ctx, userMessage("hello"))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task).ID
	var want []string
	for i := range 5 {
		id := fmt.Sprint("cfg-", i)
		want = append(want, id)
		if _, err := ts.handler.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task, ID: id, URL: "https://example.com/" + id}); err != nil {
			t.Fatal(err)
		}
	}
	for name, list := range listers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []string
			token, pages := "", 0
			for {
				p, code := list(t, string(task), 2, token)
				if code != 0 {
					t.Fatalf("page %d: error %d", pages+1, code)
				}
				pages++
				if len(p.ids) > 2 {
					t.Errorf("page %d has %d configs, want at most 2", pages, len(p.ids))
				}
				got = append(got, p.ids...)
				if token = p.token; token == "" || pages > 5 {
					break
				}
			}
			if diff := cmp.Diff(want, got); diff != "" || pages != 3 {
				t.Errorf("%d pages of 2 (-want +got):\n%s", pages, diff)
			}
			if all, code := list(t, string(task), 0, ""); code != 0 || len(all.ids) != 5 || all.token != "" {
				t.Errorf("pageSize 0: %v, error %d; want all 5, no token", all, code)
			}
			if _, code := list(t, string(task), -1, ""); code != invalid[name] {
				t.Errorf("pageSize -1: error %d, want %d (INVALID_PARAMS)", code, invalid[name])
			}
			if _, code := list(t, string(task), 2, "not-a-token"); code != invalid[name] {
				t.Errorf("a made-up pageToken: error %d, want %d (INVALID_PARAMS)", code, invalid[name])
			}
		})
	}
}

// TestRESTPageSizeNotANumber: ?pageSize=abc is INVALID_ARGUMENT, not ignored.
func TestRESTPageSizeNotANumber(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{engine: true})
	r := do(t, "GET", ts.baseURL+DefaultRESTPath+"/tasks/x/pushNotificationConfigs?pageSize=abc", nil)
	if e := restError(t, r); e.Code != 400 || e.Status != "INVALID_ARGUMENT" || !strings.Contains(string(r.body), "pageSize") {
		t.Errorf("pageSize=abc: %+v %s; want 400 INVALID_ARGUMENT", e, r.body)
	}
}
