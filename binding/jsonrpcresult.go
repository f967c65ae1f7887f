package binding

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// emptyResults are the JSON-RPC methods whose successful response carries no value, with the
// result they answer: a2a-go's handlers answer them with neither result nor error
// ({"jsonrpc":"2.0","id":1}), which JSON-RPC 2.0 forbids. 1.0's DeleteTaskPushNotificationConfig
// returns google.protobuf.Empty, whose ProtoJSON is {}; 0.3's delete returned null.
var emptyResults = map[string]string{
	"DeleteTaskPushNotificationConfig":    `{}`,
	"tasks/pushNotificationConfig/delete": `null`,
}

// resultWriter holds back a unary JSON-RPC response (a2a-go writes it with one Write) and, when
// it is a response object with neither result nor error, sends it with result set.
type resultWriter struct {
	w      http.ResponseWriter
	result string
	status int
	buf    bytes.Buffer
}

func (rw *resultWriter) Header() http.Header { return rw.w.Header() }

func (rw *resultWriter) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
}

func (rw *resultWriter) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	return rw.buf.Write(b)
}

// finish sends the response.
func (rw *resultWriter) finish() {
	body := rw.buf.Bytes()
	var resp struct {
		Result, Error json.RawMessage
		JSONRPC       string `json:"jsonrpc"`
	}
	if json.Unmarshal(body, &resp) == nil && resp.JSONRPC == "2.0" && resp.Result == nil && resp.Error == nil {
		trimmed := bytes.TrimRight(body, " \t\r\n")
		if n := len(trimmed); n > 0 && trimmed[n-1] == '}' {
			body = append(trimmed[:n-1:n-1], `,"result":`+rw.result+"}\n"...)
		}
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	rw.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.w.WriteHeader(rw.status)
	_, _ = rw.w.Write(body)
}
