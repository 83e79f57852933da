// Package contracttest checks an http.Handler of a Go stack against the
// contract in-process: the shared vectors through real HTTP, exact headers,
// HEAD, 404 and 405, and the display name against the stack's server.toml.
// The stacks' own tests call Run; the full black-box check of a running
// server is contracts/conformance.
package contracttest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"serverlab/contract"
	"serverlab/contract/vectors"
)

// Calendar loads the shared calendar (contracts/calendar).
func Calendar(tb testing.TB) *contract.Calendar {
	tb.Helper()
	path, err := vectors.CalendarPath()
	if err != nil {
		tb.Fatal(err)
	}
	cal, err := contract.LoadCalendar(path)
	if err != nil {
		tb.Fatal(err)
	}
	return cal
}

// Service returns the Service of displayName over the shared calendar.
func Service(tb testing.TB, displayName string) *contract.Service {
	tb.Helper()
	return contract.NewService(displayName, Calendar(tb))
}

// Answerer returns the Service method that answers path ("/" or "/workday"),
// as the microbenchmark and the instruction counter call it.
func Answerer(svc *contract.Service, path string) func(string, time.Time) (int, []byte) {
	if path == "/workday" {
		return svc.Workday
	}
	return svc.Root
}

// Inputs loads the shared input vectors (contracts/vectors/inputs.json).
func Inputs(tb testing.TB) *vectors.Inputs {
	tb.Helper()
	in, err := vectors.LoadInputs()
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// ManifestDisplayName returns display_name from the server.toml in the
// working directory (a stack's folder), so tests can check that the name
// compiled into the stack matches its manifest.
func ManifestDisplayName(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("server.toml")
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^display_name\s*=\s*"([^"]*)"`).FindSubmatch(b)
	if m == nil {
		tb.Fatal("server.toml has no display_name")
	}
	return string(m[1])
}

type response struct {
	status int
	header http.Header
	body   string
	chunk  bool
}

// Run serves h with httptest and checks it against the contract. Run it
// from the stack's folder: displayName, the one compiled into the stack,
// must also be the display_name of its server.toml.
func Run(t *testing.T, h http.Handler, displayName string) {
	t.Run("display name", func(t *testing.T) {
		if got := ManifestDisplayName(t); got != displayName {
			t.Errorf("server.toml display_name %q, code %q", got, displayName)
		}
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()

	do := func(t *testing.T, method, target string) response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return response{resp.StatusCode, resp.Header, string(b), len(resp.TransferEncoding) > 0}
	}
	// expect checks status, body and the headers every 200 and 400 carries.
	expect := func(t *testing.T, target string, status int, body func(string) bool) response {
		t.Helper()
		r := do(t, http.MethodGet, target)
		if r.status != status || !body(r.body) {
			t.Errorf("GET %s = %d %.80q", target, r.status, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != contract.ContentType {
			t.Errorf("GET %s: Content-Type %q", target, ct)
		}
		if cl := r.header.Get("Content-Length"); r.chunk || cl != strconv.Itoa(len(r.body)) {
			t.Errorf("GET %s: Content-Length %q for %d bytes, chunked %v", target, cl, len(r.body), r.chunk)
		}
		if d, err := http.ParseTime(r.header.Get("Date")); err != nil || time.Since(d).Abs() > 2*time.Second {
			t.Errorf("GET %s: Date %q", target, r.header.Get("Date"))
		}
		for _, k := range []string{"Content-Encoding", "Set-Cookie"} {
			if v := r.header.Get(k); v != "" {
				t.Errorf("GET %s: unexpected %s: %s", target, k, v)
			}
		}
		return r
	}
	is := func(want string) func(string) bool { return func(s string) bool { return s == want } }

	helloRE := regexp.MustCompile(`^Hello World, from ` + regexp.QuoteMeta(displayName) +
		`! (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3})$`)
	isHello := func(s string) bool {
		m := helloRE.FindStringSubmatch(s)
		if m == nil {
			return false
		}
		at, err := time.Parse("2006-01-02 15:04:05.000", m[1])
		return err == nil && time.Since(at).Abs() < 2*time.Second
	}

	in := Inputs(t)
	cases, err := vectors.Workday()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("n", func(t *testing.T) {
		for _, c := range in.N.Valid {
			expect(t, "/?"+c.Raw, 200, is(strings.Repeat("X", c.KB*1000)))
		}
		for _, c := range in.N.Hello {
			expect(t, "/?"+c.Raw, 200, isHello)
		}
		expect(t, "/", 200, isHello)
		for _, c := range in.N.Invalid {
			expect(t, "/?"+c.Raw, 400, is(contract.BadN))
		}
	})
	t.Run("at", func(t *testing.T) {
		for _, c := range in.At.Valid {
			expect(t, "/workday?"+c.Raw, 200, is(c.Expect))
		}
		for _, c := range in.At.Invalid {
			expect(t, "/workday?"+c.Raw, 400, is(contract.BadAt))
		}
		for _, c := range cases {
			expect(t, "/workday?at="+url.QueryEscape(c.At), 200, is(c.Expect))
		}
		today := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
		expect(t, "/workday", 200, today.MatchString)
		expect(t, "/workday?n=5", 200, today.MatchString)
	})
	t.Run("HEAD", func(t *testing.T) {
		for _, target := range []string{"/", "/?n=100", "/?n=0", "/workday", "/workday?at=2019-05-05T10:00", "/workday?at="} {
			get := do(t, http.MethodGet, target)
			head := do(t, http.MethodHead, target)
			if head.status != get.status || head.body != "" ||
				head.header.Get("Content-Type") != contract.ContentType ||
				head.header.Get("Content-Length") != get.header.Get("Content-Length") {
				t.Errorf("HEAD %s = %d, Content-Type %q, Content-Length %q, %d body bytes; GET gave %d, %q",
					target, head.status, head.header.Get("Content-Type"), head.header.Get("Content-Length"),
					len(head.body), get.status, get.header.Get("Content-Length"))
			}
		}
	})
	t.Run("405", func(t *testing.T) {
		for _, target := range []string{"/", "/workday", "/?n=5", "/workday?at=2019-05-05T10:00"} {
			for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"} {
				r := do(t, m, target)
				if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != contract.Allow {
					t.Errorf("%s %s = %d, Allow %q", m, target, r.status, r.header.Values("Allow"))
				}
			}
		}
	})
	t.Run("404", func(t *testing.T) {
		for _, target := range []string{"/workday/", "/index.html", "/foo", "/Workday", "/workday/x", "/favicon.ico"} {
			for _, m := range []string{"GET", "HEAD", "POST"} {
				if r := do(t, m, target); r.status != http.StatusNotFound {
					t.Errorf("%s %s = %d, want 404", m, target, r.status)
				}
			}
		}
	})
}
