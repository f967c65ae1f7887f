package main

// The library site the researcher reads: a few plain-text pages at /wiki/{topic}, served on
// 127.0.0.1 by the example itself, so that it needs no internet.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/a2awebcap/a2awebcap/x402"
)

// libraryPages are the site's pages by topic (lower case, words joined by "_"). Plain ASCII
// on one line, without quotes: the researcher's rules cut the page out of the fetch result's
// JSON with CEL's string functions.
var libraryPages = map[string]string{
	"alexandria": "The Library of Alexandria, in Egypt, was one of the largest libraries of the ancient world. " +
		"Founded under Ptolemy I or II around 285 BC, it held hundreds of thousands of scrolls and drew scholars " +
		"such as Eratosthenes, who measured the circumference of the Earth there.",
	"carthage": "Carthage, near modern Tunis, was the capital of a Phoenician trading empire that fought Rome " +
		"in the three Punic Wars and was destroyed in 146 BC.",
	"pergamon": "The library of Pergamon, in Asia Minor, rivalled that of Alexandria; parchment takes its name " +
		"from the city, whose scribes wrote on prepared skins when papyrus was scarce.",
}

// libraryHandler serves the pages as text/plain, and at / the list of topics.
func libraryHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /wiki/{topic}", func(w http.ResponseWriter, r *http.Request) {
		page, ok := libraryPages[strings.ToLower(r.PathValue("topic"))]
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("The library has no page on this topic."))
			return
		}
		_, _ = w.Write([]byte(page))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for topic := range libraryPages {
			_, _ = w.Write([]byte("/wiki/" + topic + "\n"))
		}
	})
	return mux
}

// serveLibrary serves the library site on addr, and an x402 facilitator at /x402, until ctx
// ends.
func serveLibrary(ctx context.Context, addr string) error {
	// Beside it, an x402 facilitator (without a ledger: any signed payment is good) for the
	// researcher's payments under serve, which names it with -x402-facilitator.
	mux := http.NewServeMux()
	mux.Handle("/x402/", http.StripPrefix("/x402", x402.NewLocalFacilitator(&x402.LocalOptions{Assets: []x402.Asset{Asset}})))
	mux.Handle("/", libraryHandler())
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
