package main

import (
	"log/slog"
	"net/http"
	"os"

	"github.com/a2awebcap/a2awebcap/web"
)

// serveWeb serves the browser client (package web) at /web/, and the capnweb binding's
// TypeScript types at /web/a2awebcap.d.ts, and redirects / there. The page,
// its script and the capnweb module it loads are embedded in the binary; capnwebJS, when not
// empty, names a file served instead of the embedded module (a newer capnweb build, say).
// A capnwebJS that cannot be read is reported at start, and the page then says so.
//
// With hosted (-agents), each agent's page is at /agents/NAME/web/ too: the same files, which
// find the agent's card (../.well-known/agent-card.json) and so its bindings relative to where
// the page is. There is no root agent then: /web/ (where / redirects) is the index of the
// agents (web.AgentsPage), with links to their pages and cards.
func serveWeb(mux *http.ServeMux, capnwebJS string, hosted bool, log *slog.Logger) {
	app := http.StripPrefix("/web/", web.Handler())
	if hosted {
		mux.HandleFunc("GET /agents/{name}/web/{rest...}", func(w http.ResponseWriter, r *http.Request) {
			r2 := r.Clone(r.Context())
			r2.URL.Path, r2.URL.RawPath = "/web/"+r.PathValue("rest"), ""
			if r.PathValue("rest") == "" {
				app.ServeHTTP(w, r2) // the app's page, not the index at /web/
				return
			}
			mux.ServeHTTP(w, r2)
		})
		mux.Handle("GET /web/{$}", web.Secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.ServeFileFS(w, r, web.Files(), web.AgentsPage)
		})))
	}
	mux.Handle("GET /web/", app)
	// The binding's TypeScript types, as text (a .ts name maps to video/mp2t in some MIME tables).
	mux.Handle("GET /web/"+web.TypesPath, web.Secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(web.Types())
	})))
	if capnwebJS != "" {
		if _, err := os.Stat(capnwebJS); err != nil {
			log.Warn("-capnweb-js: the web page's module is missing", "path", capnwebJS, "err", err)
		}
		mux.Handle("GET /web/"+web.ModulePath, web.Secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := os.ReadFile(capnwebJS)
			if err != nil {
				http.Error(w, "the capnweb module named by -capnweb-js cannot be read", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(b)
		})))
	}
	mux.Handle("GET /{$}", http.RedirectHandler("/web/", http.StatusFound))
}
