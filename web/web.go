// Package web is the web app `serve` offers at /web/ (docs/web.md): a chat with the agent over
// the A2A capnweb binding, in plain ES modules with no build step — index.html, app.css,
// app.js (state, views, flows), conn.js (card, WebSocket, sign-in, reconnection) and
// markdown.js (a renderer that builds DOM nodes, never HTML) — and the stock capnweb module.
//
// Everything the page loads is embedded in the binary: conn.js imports the module by the
// relative path vendor/capnweb.js, which is the file dist/index.js of npm capnweb@0.12.0,
// vendored byte for byte with its licence (vendor/LICENSE.txt). So the page works from any
// working directory and from `go install`, with no npm at run time. [Handler] serves the files
// with a Content-Security-Policy that lets the page load nothing, and connect nowhere, but its
// own origin.
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// ModulePath is where, relative to the page, it expects the capnweb ES module; [Files] has it
// there.
const ModulePath = "vendor/capnweb.js"

// AgentsPage is, in [Files], the index of the agents `serve -agents` hosts: it lists them
// (their names, descriptions and cards, from ../agents and each card) with links to each
// agent's app (../agents/NAME/web/). It is served at /web/ with the same [CSP].
const AgentsPage = "agents.html"

// CapnwebVersion is the npm capnweb release vendored at [ModulePath].
const CapnwebVersion = "0.12.0"

//go:embed index.html app.css app.js conn.js markdown.js agents.html agents.css agents.js vendor/capnweb.js vendor/LICENSE.txt
var files embed.FS

// Files returns the page's files: index.html, app.css, the modules, the capnweb module with
// its licence under vendor/, and the hosted agents' index ([AgentsPage], agents.css, agents.js).
func Files() fs.FS { return files }

// CSP is the Content-Security-Policy [Handler] sends: scripts, styles, fonts and connections
// (the WebSocket included) from the page's own origin only, images also from data: and blob:
// URLs, no base URL, no form submission, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves [Files] (mount it with http.StripPrefix under the page's path, e.g. /web/),
// each response with [CSP], X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer.
func Handler() http.Handler { return Secure(http.FileServerFS(files)) }

// Secure wraps h, which serves the page or its files, so that its responses carry the page's
// security headers, as [Handler]'s do.
func Secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", CSP)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}
