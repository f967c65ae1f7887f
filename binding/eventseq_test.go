package binding

import (
	"encoding/json"
	"testing"
)

// seqCases are stream events as data lines carry them, the engine's and odd ones.
var seqCases = []struct {
	jsonrpc bool
	data    string
}{
	{true, `{"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","artifact":{"parts":[{"text":"a \"b\" {c}","metadata":{"a2awebcap.seq":99}}]},"metadata":{"a2awebcap.seq":3}}}}`},
	{true, `{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","metadata":{"a2awebcap.seq":4}}}`},
	{true, `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","history":[{"metadata":{"a2awebcap.seq":1}}],"metadata":{"x":[1,{"y":"}"}],"a2awebcap.seq":12}}}}`},
	{true, `{"jsonrpc":"2.0","id":1,"result":null}`},
	{true, `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"data":{"metadata":{"a2awebcap.seq":5}}}}`},
	{true, `{"result":{"metadata":{"a2awebcap.seq":4},"statusUpdate":{"metadata":{"a2awebcap.seq":8}}}}`},
	{true, `{"result":{"statusUpdate":{"metadata":{"a2awebcap.seq":8}},"task":{"metadata":{"a2awebcap.seq":2}}}}`},
	{true, `{"result":{"task":{"metadata":{"a2awebcap.seq":2}},"task":{"metadata":{}}}}`},
	{true, `{"Result":{"task":{"metadata":{"a2awebcap.seq":2}}}}`},
	{true, `{"result":{"TASK":{"metadata":{"a2awebcap.seq":2}}}}`},
	{true, `{"result":{"task":{"meta\u0064ata":{"a2awebcap.seq":2}}}}`},
	{true, `{"result":{"task":{"metadata":{"a2awebcap.seq":"2"}}}}`},
	{true, `{"result":{"task":{"metadata":{"a2awebcap.seq":null}}}}`},
	{true, `{"result":{"task":{"metadata":"x","id":"t"},"metadata":{"a2awebcap.seq":1}}}`},
	{true, `{"result":[{"task":{"metadata":{"a2awebcap.seq":2}}}]}`},
	{true, `{"result":{"task":{"metadata":{"a2awebcap.seq":1e2}}}}`},
	{true, `{"result":{"task":{"metadata":{"a2awebcap.seq":-3}}}}`},
	{true, `{"result":{"task":{"metadata":{"a2awebcap.seq":9223372036854775808}}}}`},
	{true, ` { "result" : { "task" : { "metadata" : { "a2awebcap.seq" : 6 } } } } `},
	{false, `{"statusUpdate":{"taskId":"t","metadata":{"a2awebcap.seq":7}}}`},
	{false, `{"msg":{"metadata":{"a2awebcap.seq":7}},"message":{"metadata":{"a2awebcap.seq":5}}}`},
	{false, `{"statusUpdate":{"status":{"message":{"metadata":{"a2awebcap.seq":9}}}}}`},
	{false, `{"task":{"metadata":{"a2awebcap.seq":-1.5}}}`},
	{false, `{"task":{"metadata":{"a2awebcap.seq":7,"a2awebcap.seq":8}}}`},
}

// The scan answers as the decode does wherever it answers, and answers for the engine's events.
func TestScanEventSeq(t *testing.T) {
	t.Parallel()
	for i, c := range seqCases {
		checkScanEventSeq(t, []byte(c.data), c.jsonrpc)
		if i < 3 {
			if _, _, ok := scanEventSeq([]byte(c.data), c.jsonrpc); !ok {
				t.Errorf("scanEventSeq(%s) left the engine's event to the decode", c.data)
			}
		}
	}
}

func checkScanEventSeq(t *testing.T, data []byte, jsonrpc bool) {
	t.Helper()
	seq, found, ok := scanEventSeq(data, jsonrpc)
	if !ok {
		return
	}
	wseq, wfound := decodeEventSeq(data, jsonrpc)
	if seq != wseq || found != wfound {
		t.Errorf("scanEventSeq(%s, %v) = %d, %v; decoding gives %d, %v", data, jsonrpc, seq, found, wseq, wfound)
	}
}

// FuzzScanEventSeq: on valid JSON (what the encoder writes), the scan answers as the decode.
func FuzzScanEventSeq(f *testing.F) {
	for _, c := range seqCases {
		f.Add([]byte(c.data), c.jsonrpc)
	}
	f.Fuzz(func(t *testing.T, data []byte, jsonrpc bool) {
		if !json.Valid(data) {
			return
		}
		checkScanEventSeq(t, data, jsonrpc)
	})
}

// BenchmarkEventSeq: the sequence number of an artifact update as the JSON-RPC stream writes it.
func BenchmarkEventSeq(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":"0d2c7a55-8a1c-4b7e-9d1a-3c0b1f2e4d5a","result":{"artifactUpdate":{"taskId":"5b1f7a3e-2c4d-4e6f-8a9b-0c1d2e3f4a5b","contextId":"9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b","artifact":{"artifactId":"a-17","parts":[{"text":"token 17 of the stream, with some text to it"}]},"append":true,"metadata":{"a2awebcap.seq":19}}}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			eventSeq(data, true)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeEventSeq(data, true)
		}
	})
}
