package capnweb

import (
	"net/http"
)

// Go types for the capnweb values that have no natural Go counterpart. The full mapping is in the
// package documentation (doc.go).

type undefined struct{}

// Undefined is the JavaScript value undefined, distinct from null (nil).
var Undefined any = undefined{}

// InvalidDate is a JavaScript Date whose time is NaN (["date", null] on the wire). Valid dates
// are time.Time.
type InvalidDate struct{}

// TypedBytes is a byte container other than a plain Uint8Array: an ArrayBuffer, a DataView or a
// typed array, named by Type ("ArrayBuffer", "Int16Array", …). Data holds the elements in
// little-endian order. A plain []byte travels as a Uint8Array.
type TypedBytes struct {
	Type string
	Data []byte
}

var byteContainerElemSize = map[string]int{
	"ArrayBuffer": 1, "DataView": 1, "Int8Array": 1, "Uint8Array": 1, "Uint8ClampedArray": 1,
	"Int16Array": 2, "Uint16Array": 2, "Int32Array": 4, "Uint32Array": 4,
	"BigInt64Array": 8, "BigUint64Array": 8, "Float32Array": 4, "Float64Array": 8,
}

// Blob is a JavaScript Blob: bytes and a MIME type. On the wire its content travels through a
// pipe; the receiver collects it before delivering the value.
type Blob struct {
	Type string
	Data []byte
}

// Request is a Fetch API Request. Body is nil, a string, a []byte or a *ReadableStream. Init
// holds the other plain RequestInit properties (cache, redirect, mode, …) as sent.
type Request struct {
	URL     string
	Method  string // "" means GET
	Headers http.Header
	Body    any
	Init    map[string]any
}

// Response is a Fetch API Response. Body is nil, a string, a []byte or a *ReadableStream.
type Response struct {
	Status     int // 0 means 200
	StatusText string
	Headers    http.Header
	Body       any
	Init       map[string]any
}
