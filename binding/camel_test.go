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
