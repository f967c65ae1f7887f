package binding

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCamelParams(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"proto names", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","history_length":1}}`,
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":1}}`},
		{"nested, metadata kept", `{"id":1,"params":{"message":{"message_id":"m","task_id":"t","metadata":{"my_key":1},"parts":[{"data":{"snake_case":true}}]}}}`,
			`{"id":1,"params":{"message":{"messageId":"m","taskId":"t","metadata":{"my_key":1},"parts":[{"data":{"snake_case":true}}]}}}`},
		{"camelCase wins over a duplicate", `{"params":{"page_size":5,"pageSize":7}}`, `{"params":{"pageSize":7}}`},
		{"unchanged", `{"params":{"id":"t"}}`, `{"params":{"id":"t"}}`},
		{"not JSON", `{"params":`, `{"params":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := camelParams([]byte(tt.in))
			var g, w any
			if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(tt.want), &w) != nil {
				if string(got) != tt.want {
					t.Errorf("camelParams(%s) = %s, want %s", tt.in, got, tt.want)
				}
				return
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("camelParams(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// mayHaveSnakeKey, camelParams's shortcut, answers true for every key with an underscore,
// however spelled, and false where only values hold one.
func TestMayHaveSnakeKey(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{`{"params":{"history_length":1}}`, true},
		{`{"params":{"history\u005flength":1}}`, true},
		{`{"params" : {"a" : {"task_id" :"t"}}}`, true},
		{"{\"params\":{\"task_id\"\n:1}}", true},
		{`{"params":{"metadata":{"my_key":1}}}`, true}, // kept by camelParams, but a key all the same
		{`{"params":{"id":"t_1","text":"snake_case \" \\ x_y"}}`, false},
		{`{"params":{"id":"t"},"method":"a_b"}`, false},
		{`["a_b"]`, false},
		{`{"params":{"text":"\"a_b\":"}}`, false}, // a key in a string is no key
	} {
		if got := mayHaveSnakeKey([]byte(tt.in)); got != tt.want {
			t.Errorf("mayHaveSnakeKey(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// BenchmarkCamelParams: a sendMessage request as clients send it, in lowerCamelCase (the
// common case, which the shortcut passes), and in the proto names.
func BenchmarkCamelParams(b *testing.B) {
	camel := []byte(`{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"0d2c7a55-8a1c-4b7e-9d1a-3c0b1f2e4d5a","role":"ROLE_USER","parts":[{"text":"hello, world"}],"metadata":{"trace":"x"}},"configuration":{"historyLength":2}}}`)
	snake := []byte(`{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"message_id":"0d2c7a55-8a1c-4b7e-9d1a-3c0b1f2e4d5a","role":"ROLE_USER","parts":[{"text":"hello, world"}]},"configuration":{"history_length":2}}}`)
	for _, c := range []struct {
		name string
		body []byte
	}{{"camel", camel}, {"snake", snake}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				camelParams(c.body)
			}
		})
	}
}
