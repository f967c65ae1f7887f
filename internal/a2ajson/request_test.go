package a2ajson

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
)

// requestSameAsUnmarshal checks that DecodeRequest reads b into each request type as
// json.Unmarshal does, and reports whether the hand-written path took it for any.
func requestSameAsUnmarshal(t *testing.T, b []byte) (fast bool) {
	t.Helper()
	for _, mk := range []func() any{func() any { return new(a2a.SendMessageRequest) }, func() any { return new(a2a.GetTaskRequest) }} {
		want, got, direct := mk(), mk(), mk()
		werr := json.Unmarshal(b, want)
		if decodeRequest(b, direct) {
			fast = true
			if werr != nil {
				t.Errorf("decodeRequest(%s, %T) took what json.Unmarshal refuses (%v)", b, direct, werr)
			} else if !reflect.DeepEqual(direct, want) {
				t.Errorf("decodeRequest(%s, %T) differs from json.Unmarshal (-want +got):\n%s", b, direct, cmp.Diff(want, direct))
			}
		}
		err := DecodeRequest(b, got)
		switch {
		case (err == nil) != (werr == nil):
			t.Errorf("DecodeRequest(%s, %T) error = %v, json.Unmarshal's %v", b, got, err, werr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Errorf("DecodeRequest(%s, %T) differs from json.Unmarshal (-want +got):\n%s", b, got, cmp.Diff(want, got))
		}
	}
	return fast
}

var requests = []struct {
	json string
	fast bool // read by hand
}{
	{`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, true},
	{` { "message" : { "messageId" : "m1" , "role" : "ROLE_USER" , "parts" : [ { "text" : "hi\n\u00e9" } ] , "contextId" : "c" , "taskId" : "t" , "metadata" : { "k" : [ 1 , null ] } } , "metadata" : { } , "tenant" : "x" } `, true},
	{`{"message":{"messageId":"m1","parts":[{"data":{"a":1}},{"url":"https://x","mediaType":"text/plain","filename":"f"},{"raw":"aGk="}]}}`, true},
	{`{"message":null}`, true},
	{`{}`, true},
	{`{"id":"t1"}`, true},
	{`{"id":"t1","historyLength":0,"tenant":"x"}`, true},
	{`{"id":"t1","historyLength":123456789}`, true},
	// Given up on, and read by json.Unmarshal.
	{`{"message":{"messageId":"m1","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true,"acceptedOutputModes":["text/plain"],"historyLength":2}}`, true},
	{`{"configuration":{"returnImmediately":false,"acceptedOutputModes":[]}}`, true},
	{`{"configuration":{}}`, true},
	{`{"configuration":{"taskPushNotificationConfig":{"url":"https://x"}}}`, false},
	{`{"configuration":{"returnImmediately":null}}`, false},
	{`{"configuration":null}`, false},
	{`{"configuration":{"returnImmediately":truex}}`, false},
	{`{"Message":{"messageId":"m1"}}`, false},
	{`{"message":{"messageId":"m1"},"message":{"messageId":"m2"}}`, false},
	{`{"id":"t1","historyLength":1.0}`, false},
	{`{"id":"t1","historyLength":-1}`, false},
	{`{"id":"t1","historyLength":1234567890}`, false},
	{`{"id":"t1","historyLength":01}`, false},
	{`{"metadata":null}`, false},
	{`{"id":"t1"} x`, false},
	{`{"id":"t1"`, false},
	{`null`, false},
	{`[]`, false},
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	for _, r := range requests {
		if fast := requestSameAsUnmarshal(t, []byte(r.json)); fast != r.fast {
			t.Errorf("%s: read by hand %v, want %v", r.json, fast, r.fast)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range requests {
		f.Add([]byte(r.json))
	}
	f.Fuzz(func(t *testing.T, b []byte) { requestSameAsUnmarshal(t, b) })
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(`{"message":{"messageId":"4f1b6d2e-8a77-4c3e-9b1a-2d5e6f7a8b9c","role":"ROLE_USER","parts":[{"text":"hello"}]}}`)
	b.Run("codec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r a2a.SendMessageRequest
			if err := DecodeRequest(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r a2a.SendMessageRequest
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
