package contract

import (
	"net/http"
	"time"
)

// ContentType is the exact Content-Type of every 200 and 400 response.
const ContentType = "text/plain; charset=utf-8"

// The 400 bodies, verbatim from the contract.
const (
	BadN  = "n must be an integer between 1 and 100"
	BadAt = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]"
)

var (
	badNBody  = []byte(BadN)
	badAtBody = []byte(BadAt)
)

// Allow is the Allow header of a 405 on a known route.
const Allow = "GET, HEAD"

// Service answers the two routes of the contract. Stacks route GET and HEAD
// on "/" to Root and on "/workday" to Workday and write the status and body
// they return, with Content-Type ContentType and an exact Content-Length.
// A Service is safe for concurrent use. The returned bodies are read-only.
type Service struct {
	hello Hello
	cal   *Calendar
}

// NewService returns the Service of the stack named displayName (the
// manifest's display_name, used verbatim in the hello body).
func NewService(displayName string, cal *Calendar) *Service {
	return &Service{hello: NewHello(displayName), cal: cal}
}

// Root answers "/": the hello text without n (or with an empty n), the
// n-KB body for a valid n, 400 otherwise. Other parameters are ignored.
func (s *Service) Root(rawQuery string, now time.Time) (status int, body []byte) {
	v, present, ok := QueryValue(rawQuery, "n")
	switch {
	case !ok:
		return http.StatusBadRequest, badNBody
	case !present || v == "":
		return http.StatusOK, s.hello.Body(now)
	}
	n, ok := ParseN(v)
	if !ok {
		return http.StatusBadRequest, badNBody
	}
	return http.StatusOK, KB(n)
}

// Workday answers "/workday": the trading day of now, or of the local time
// in at; 400 for an invalid or empty at. Other parameters are ignored.
func (s *Service) Workday(rawQuery string, now time.Time) (status int, body []byte) {
	v, present, ok := QueryValue(rawQuery, "at")
	if !ok {
		return http.StatusBadRequest, badAtBody
	}
	lt := LocalTimeOf(now)
	if present {
		if lt, ok = ParseAt(v); !ok {
			return http.StatusBadRequest, badAtBody
		}
	}
	return http.StatusOK, s.cal.TradingDay(lt).Append(make([]byte, 0, 10))
}
