package binding

// Paging ListTaskPushNotificationConfigs where a2a-go's adapters drop a page parameter:
//
//   - Over HTTP+JSON it takes pageSize and pageToken as query parameters (GET
//     /tasks/{id}/pushNotificationConfigs?pageSize=10&pageToken=…), which a2a-go's REST handler
//     does not read: serveREST reads them into the request's context (withRESTPage), and the
//     handler a2a-go calls (pagedHandler) puts them back into the request.
//   - Over gRPC, a2a-go's handler answers with an empty next_page_token whatever the
//     RequestHandler returned: the server's unary interceptor leaves a place in the context
//     (withNextPageToken), pagedHandler fills it, and the interceptor puts it in the answer.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

type restPageKey struct{}

// restPage is the page a REST ListTaskPushNotificationConfigs asks for.
type restPage struct {
	size  int
	token string
}

// withRESTPage returns r with the page parameters of a push-config list request (sub is its
// path below the REST base) in its context, or an INVALID_ARGUMENT error for a pageSize that
// is no whole number. Other requests come back as they are.
func withRESTPage(r *http.Request, sub string) (*http.Request, *requestError) {
	if r.Method != http.MethodGet || !strings.HasSuffix(sub, "/pushNotificationConfigs") {
		return r, nil
	}
	q := r.URL.Query()
	var p restPage
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, &requestError{
				reason:      "INVALID_PARAMS",
				message:     fmt.Sprintf("pageSize %q is not a whole number", v),
				jsonrpcCode: -32602,
				httpStatus:  http.StatusBadRequest,
				httpStatusT: "INVALID_ARGUMENT",
				grpcCode:    codes.InvalidArgument,
			}
		}
		p.size = int(n)
	}
	p.token = q.Get("pageToken")
	if p == (restPage{}) {
		return r, nil
	}
	return r.WithContext(context.WithValue(r.Context(), restPageKey{}, p)), nil
}

// pagedHandler gives ListTaskPushConfigs the page withRESTPage found, and leaves the next
// page's token where withNextPageToken looks for it.
type pagedHandler struct{ a2asrv.RequestHandler }

func (h pagedHandler) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	if p, ok := ctx.Value(restPageKey{}).(restPage); ok && req != nil {
		r := *req
		r.PageSize, r.PageToken = p.size, p.token
		req = &r
	}
	res, err := h.RequestHandler.ListTaskPushConfigs(ctx, req)
	if tok, ok := ctx.Value(nextTokenKey{}).(*string); ok && res != nil {
		*tok = res.NextPageToken
	}
	return res, err
}

type nextTokenKey struct{}

// withNextPageToken runs a gRPC unary handler; for ListTaskPushNotificationConfigs it puts the
// next page's token, which a2a-go's handler drops, into the answer.
func withNextPageToken(ctx context.Context, method string, req any, handler grpc.UnaryHandler) (any, error) {
	if !strings.HasSuffix(method, "/ListTaskPushNotificationConfigs") {
		return handler(ctx, req)
	}
	var tok string
	resp, err := handler(context.WithValue(ctx, nextTokenKey{}, &tok), req)
	if r, ok := resp.(*a2apb.ListTaskPushNotificationConfigsResponse); ok && err == nil {
		r.NextPageToken = tok
	}
	return resp, err
}
