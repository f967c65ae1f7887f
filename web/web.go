// Package web is a small browser client for the A2A capnweb binding: a page (index.html, app.js)
// that finds the binding on the agent card, opens one WebSocket with the stock capnweb ES
// module, and renders the events of each streamed message.
//
// The page imports the module as "capnweb" through an import map that points at
// vendor/capnweb.js beside it: whoever serves Files serves there the file dist/index.js of npm
// capnweb (interop/node_modules/capnweb after `make npm`). The page loads nothing else, from
// nowhere else.
package web

import (
	"embed"
	"io/fs"
)

// ModulePath is where, relative to the page, it expects the capnweb ES module.
const ModulePath = "vendor/capnweb.js"

//go:embed index.html app.js
var files embed.FS

// Files returns the page's files: index.html and app.js.
func Files() fs.FS { return files }
