package contract_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"serverlab/contract"
	"serverlab/contract/vectors"
)

func loadCalendar(tb testing.TB) *contract.Calendar {
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

func loadInputs(tb testing.TB) *vectors.Inputs {
	tb.Helper()
	in, err := vectors.LoadInputs()
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

func TestWorkdayVectors(t *testing.T) {
	cases, err := vectors.Workday()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Fatalf("only %d workday cases", len(cases))
	}
	cal := loadCalendar(t)
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

func TestInputsN(t *testing.T) {
	in := loadInputs(t)
	svc := contract.NewService("Test", loadCalendar(t))
	for _, c := range in.N.Valid {
		st, body := svc.Root(c.Raw, time.Now())
		if st != http.StatusOK || len(body) != c.KB*1000 || bytes.Count(body, []byte{'X'}) != len(body) {
			t.Errorf("Root(%q) = %d, %d bytes; want 200, %d bytes of X (%s)", c.Raw, st, len(body), c.KB*1000, c.Note)
		}
	}
	for _, c := range in.N.Hello {
		st, body := svc.Root(c.Raw, time.Now())
		if st != http.StatusOK || !helloRE.Match(body) {
			t.Errorf("Root(%q) = %d %q; want the hello text (%s)", c.Raw, st, body, c.Note)
		}
	}
	for _, c := range in.N.Invalid {
		st, body := svc.Root(c.Raw, time.Now())
		if st != http.StatusBadRequest || string(body) != contract.BadN {
			t.Errorf("Root(%q) = %d %q; want 400 %q (%s)", c.Raw, st, body, contract.BadN, c.Note)
		}
	}
}

func TestInputsAt(t *testing.T) {
	in := loadInputs(t)
	svc := contract.NewService("Test", loadCalendar(t))
	for _, c := range in.At.Valid {
		st, body := svc.Workday(c.Raw, time.Now())
		if st != http.StatusOK || string(body) != c.Expect {
			t.Errorf("Workday(%q) = %d %q; want 200 %q (%s)", c.Raw, st, body, c.Expect, c.Note)
		}
	}
	for _, c := range in.At.Invalid {
		st, body := svc.Workday(c.Raw, time.Now())
		if st != http.StatusBadRequest || string(body) != contract.BadAt {
			t.Errorf("Workday(%q) = %d %q; want 400 %q (%s)", c.Raw, st, body, contract.BadAt, c.Note)
		}
	}
}

func TestWorkdayNow(t *testing.T) {
	cal := loadCalendar(t)
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
