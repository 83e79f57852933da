// Command gin serves the serverlab contract with the gin web framework on
// Go's net/http server.
package main

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"serverlab/contract"
)

// displayName must equal display_name in server.toml (a test checks it).
const displayName = "Go gin"

func main() {
	contract.Main("gin", func(s contract.Setup) error {
		// Release mode: debug mode prints every route at start-up and
		// warnings that production servers must not emit. Set before gin.New.
		gin.SetMode(gin.ReleaseMode)
		router, err := newRouter(contract.NewService(displayName, s.Calendar))
		if err != nil {
			return err
		}
		return contract.Serve(s.Config, router, displayName+" (gin "+gin.Version+")", s.Procs, s.Calendar)
	})
}

// newRouter builds the gin engine. gin.New, not gin.Default: Default adds
// the Logger middleware, which writes a line per request.
func newRouter(svc *contract.Service) (*gin.Engine, error) {
	r := gin.New()
	// Recovery stays: a panic in a handler becomes a 500 and a stack trace
	// on stderr instead of a dropped connection. It costs one deferred call
	// per request, and production gin servers keep it.
	r.Use(gin.Recovery())
	// 405 with an Allow header (RFC 9110) for other methods on a known
	// path. gin lists the methods in the order their first routes were
	// registered, so GET before HEAD below gives "Allow: GET, HEAD".
	r.HandleMethodNotAllowed = true
	// "/workday/" is an unknown path (404), not a redirect to "/workday".
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// No proxy in front: never trust X-Forwarded-For and friends.
	if err := r.SetTrustedProxies(nil); err != nil {
		return nil, err
	}

	root := func(c *gin.Context) {
		status, body := svc.Root(c.Request.URL.RawQuery, time.Now())
		write(c, status, body)
	}
	workday := func(c *gin.Context) {
		status, body := svc.Workday(c.Request.URL.RawQuery, time.Now())
		write(c, status, body)
	}
	// gin does not route HEAD to GET handlers on its own.
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r.Handle(method, "/", root)
		r.Handle(method, "/workday", workday)
	}
	return r, nil
}

// write sends a 200 or 400 response. c.Data sets the Content-Type exactly
// as given (c.String would format and buffer). Content-Length is set
// explicitly: net/http only computes it for bodies that fit its 2 KB write
// buffer and would send larger ones (the n-KB bodies) chunked. For HEAD,
// net/http sends the headers and discards the body. It adds Date itself.
func write(c *gin.Context, status int, body []byte) {
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(status, contract.ContentType, body)
}
