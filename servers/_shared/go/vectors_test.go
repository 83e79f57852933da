package contract_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"serverlab/contract"
	"serverlab/contract/contracttest"
	"serverlab/contract/vectors"
)

func TestWorkdayVectors(t *testing.T) {
	cases, err := vectors.Workday()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Fatalf("only %d workday cases", len(cases))
	}
	cal := contracttest.Calendar(t)
	svc := contract.NewService("Test", cal)
	for _, c := range cases {
		lt, ok := contract.ParseAt(c.At)
		if !ok {
			t.Errorf("ParseAt(%q) rejected a valid time (%s)", c.At, c.Note)
			continue
		}
		if got := cal.TradingDay(lt).String(); got != c.Expect {
			t.Errorf("TradingDay(%s) = %s, want %s (%s %s)", c.At, got, c.Expect, c.Kind, c.Note)
		}
		// The same through the request path, and through the instant path.
		if st, body := svc.Workday("at="+c.At, time.Now()); st != http.StatusOK || string(body) != c.Expect {
			t.Errorf("Workday(at=%s) = %d %q, want 200 %q", c.At, st, body, c.Expect)
		}
		if got := cal.TradingDayAt(lt.Time()).String(); got != c.Expect {
			t.Errorf("TradingDayAt(%s) = %s, want %s", lt.Time(), got, c.Expect)
		}
	}
}

var helloRE = regexp.MustCompile(`^Hello World, from Test! \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$`)

// checkInputs calls handle (Service.Root or Service.Workday) with the raw
// query of each input and reports every answer that is not status with a
// body that ok accepts.
func checkInputs(t *testing.T, name string, handle func(string, time.Time) (int, []byte),
	inputs []vectors.Input, status int, ok func(c vectors.Input, body []byte) bool) {
	t.Helper()
	for _, c := range inputs {
		if st, body := handle(c.Raw, time.Now()); st != status || !ok(c, body) {
			t.Errorf("%s(%q) = %d %.80q; want %d (%s)", name, c.Raw, st, body, status, c.Note)
		}
	}
}

// is accepts exactly the body want.
func is(want string) func(vectors.Input, []byte) bool {
	return func(_ vectors.Input, body []byte) bool { return string(body) == want }
}

func TestInputsN(t *testing.T) {
	in := contracttest.Inputs(t)
	svc := contracttest.Service(t, "Test")
	kilobytes := func(c vectors.Input, body []byte) bool {
		return len(body) == c.KB*1000 && bytes.Count(body, []byte{'X'}) == len(body)
	}
	hello := func(_ vectors.Input, body []byte) bool { return helloRE.Match(body) }
	checkInputs(t, "Root", svc.Root, in.N.Valid, http.StatusOK, kilobytes)
	checkInputs(t, "Root", svc.Root, in.N.Hello, http.StatusOK, hello)
	checkInputs(t, "Root", svc.Root, in.N.Invalid, http.StatusBadRequest, is(contract.BadN))
}

func TestInputsAt(t *testing.T) {
	in := contracttest.Inputs(t)
	svc := contracttest.Service(t, "Test")
	expected := func(c vectors.Input, body []byte) bool { return string(body) == c.Expect }
	checkInputs(t, "Workday", svc.Workday, in.At.Valid, http.StatusOK, expected)
	checkInputs(t, "Workday", svc.Workday, in.At.Invalid, http.StatusBadRequest, is(contract.BadAt))
}

func TestWorkdayNow(t *testing.T) {
	cal := contracttest.Calendar(t)
	svc := contract.NewService("Test", cal)
	cst := contract.Shanghai
	for _, c := range []struct {
		now  time.Time
		want string
	}{
		{time.Date(2019, 4, 30, 15, 0, 0, 0, cst), "2019-04-30"},
		// Whole seconds: the fraction of 15:00:00 is still 15:00:00.
		{time.Date(2019, 4, 30, 15, 0, 0, 999_999_999, cst), "2019-04-30"},
		{time.Date(2019, 4, 30, 15, 0, 1, 0, cst), "2019-05-06"},
		// Instants in other zones are converted to UTC+08:00.
		{time.Date(2019, 4, 30, 7, 0, 0, 0, time.UTC), "2019-04-30"},
		{time.Date(2019, 4, 30, 7, 0, 1, 0, time.UTC), "2019-05-06"},
		{time.Date(2019, 5, 4, 16, 30, 0, 0, time.UTC), "2019-05-06"}, // Sunday 00:30 local
		{time.Date(2019, 5, 5, 16, 0, 0, 0, time.UTC), "2019-05-06"},  // Monday 00:00 local
	} {
		if st, body := svc.Workday("", c.now); st != http.StatusOK || string(body) != c.want {
			t.Errorf("Workday at %s = %d %q, want %s", c.now, st, body, c.want)
		}
	}
}

func TestHelloBody(t *testing.T) {
	h := contract.NewHello("Go gin")
	for _, c := range []struct {
		now  time.Time
		want string
	}{
		{time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "2024-01-02 03:04:05.000"},
		{time.Date(2024, 1, 2, 3, 4, 5, 7_000_000, time.UTC), "2024-01-02 03:04:05.007"},
		{time.Date(2024, 1, 2, 3, 4, 5, 120_999_999, time.UTC), "2024-01-02 03:04:05.120"},
		{time.Date(2024, 1, 2, 8, 0, 0, 0, contract.Shanghai), "2024-01-02 00:00:00.000"},
	} {
		want := "Hello World, from Go gin! " + c.want
		if got := string(h.Body(c.now)); got != want {
			t.Errorf("Body(%s) = %q, want %q", c.now, got, want)
		}
	}
}

func TestKB(t *testing.T) {
	for n := 1; n <= contract.MaxKB; n++ {
		b := contract.KB(n)
		if len(b) != n*1000 || cap(b) != n*1000 || strings.Trim(string(b), "X") != "" {
			t.Fatalf("KB(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
}
