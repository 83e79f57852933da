package contract

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Serve runs handler on a net/http Server on cfg.Addr until SIGTERM or
// SIGINT, then shuts down gracefully. Every Go stack uses it, so the
// server settings below are the same whatever the router; banner is the
// start-up line's prefix (e.g. "Go gin (gin v1.12.0)").
func Serve(cfg Config, handler http.Handler, banner string, procs int, cal *Calendar) error {
	srv := &http.Server{
		Addr:    cfg.Addr,
		Handler: handler,
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
		banner, ln.Addr(), procs, cal.Len(), cal.First, cal.Last)

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
