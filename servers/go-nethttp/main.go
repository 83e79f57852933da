// Command go-nethttp serves the serverlab contract with the Go standard
// library alone: net/http's Server and the Go 1.22 ServeMux patterns.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"serverlab/contract"
)

// displayName must equal display_name in server.toml (a test checks it).
const displayName = "Go net/http"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-nethttp:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := contract.ConfigFromEnv()
	if err != nil {
		return err
	}
	procs := cfg.ApplyWorkers()
	cal, err := contract.LoadCalendar(cfg.CalendarPath)
	if err != nil {
		return err
	}

	srv := &http.Server{
		Addr:    cfg.Addr,
		Handler: newHandler(contract.NewService(displayName, cal)),
		// Bound how long a client may hold a connection without making
		// progress (slowloris); without them net/http waits forever.
		// Requests have no body, so the header timeout is the one that
		// matters for reads; WriteTimeout leaves a slow reader 30 s for the
		// largest (100 KB) body; IdleTimeout closes idle keep-alive
		// connections after 2 minutes.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	// Listen before serving so that a busy port fails start-up loudly.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s listening on %s (GOMAXPROCS=%d, %d non-trading weekdays %s..%s)\n",
		displayName, ln.Addr(), procs, cal.Len(), cal.First, cal.Last)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal ends the process at once
	// Graceful shutdown: stop accepting, close idle connections, let
	// in-flight requests finish (responses are tiny, so 10 s is plenty).
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
