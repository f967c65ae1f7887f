// Package web is a small browser client for the A2A capnweb binding: a page (index.html, app.js)
// that finds the binding on the agent card, opens one WebSocket with the stock capnweb ES
// module, and renders the events of each streamed message.
//
// Everything the page loads is embedded in the binary: the page imports the module as
// "capnweb" through an import map that points at vendor/capnweb.js beside it, which is the
// file dist/index.js of npm capnweb@0.12.0, vendored byte for byte with its licence
// (vendor/LICENSE.txt). So the page works from any working directory and from `go install`,
// with no npm at run time. The page loads nothing else, from nowhere else.
package web

import (
	"embed"
	"io/fs"
)

// ModulePath is where, relative to the page, it expects the capnweb ES module; [Files] has it
// there.
const ModulePath = "vendor/capnweb.js"

// CapnwebVersion is the npm capnweb release vendored at [ModulePath].
const CapnwebVersion = "0.12.0"

//go:embed index.html app.js vendor/capnweb.js vendor/LICENSE.txt
var files embed.FS

// Files returns the page's files: index.html, app.js, and the capnweb module with its licence
// under vendor/.
func Files() fs.FS { return files }
