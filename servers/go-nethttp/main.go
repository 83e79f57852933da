// Command go-nethttp serves the serverlab contract with the Go standard
// library alone: net/http's Server and the Go 1.22 ServeMux patterns.
package main

import (
	"net/http"
	"strconv"
	"time"

	"serverlab/contract"
)

// displayName must equal display_name in server.toml (a test checks it).
const displayName = "Go net/http"

func main() {
	contract.Main("go-nethttp", func(s contract.Setup) error {
		handler := newHandler(contract.NewService(displayName, s.Calendar))
		return contract.Serve(s.Config, handler, displayName, s.Procs, s.Calendar)
	})
}

// newHandler routes the contract's two paths. "GET /{$}" matches "/" only
// (not every path, as "/" alone would) and, like every GET pattern, HEAD
// too. For any other method on a known path the mux answers 405 with
// "Allow: GET, HEAD"; unknown paths get its 404.
func newHandler(svc *contract.Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		status, body := svc.Root(r.URL.RawQuery, time.Now())
		write(w, r, status, body)
	})
	mux.HandleFunc("GET /workday", func(w http.ResponseWriter, r *http.Request) {
		status, body := svc.Workday(r.URL.RawQuery, time.Now())
		write(w, r, status, body)
	})
	return mux
}

// write sends a 200 or 400 response. Content-Length is set explicitly:
// net/http only computes it for bodies that fit its 2 KB write buffer and
// would send larger ones (the n-KB bodies) chunked. A HEAD response carries
// the same headers and no body. net/http adds the Date header itself.
func write(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contract.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body) // an error means the client went away; nothing to do
	}
}
