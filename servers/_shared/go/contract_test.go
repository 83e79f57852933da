package contract

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDateMatchesTime(t *testing.T) {
	for d := DateOf(1600, 1, 1); d <= DateOf(2400, 12, 31); d++ {
		tm := time.Unix(int64(d)*86400, 0).UTC()
		y, m, dd := d.Civil()
		if ty, tmo, td := tm.Date(); y != ty || m != tmo || dd != td {
			t.Fatalf("Date(%d).Civil() = %d-%d-%d, want %s", d, y, m, dd, tm)
		}
		if DateOf(y, m, dd) != d {
			t.Fatalf("DateOf(Civil(%d)) = %d", d, DateOf(y, m, dd))
		}
		if d.Weekday() != tm.Weekday() {
			t.Fatalf("Date(%d).Weekday() = %s, want %s", d, d.Weekday(), tm.Weekday())
		}
	}
	if got := DateOf(2019, 5, 6).String(); got != "2019-05-06" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseAt(t *testing.T) {
	valid := map[string]string{
		"1970-01-01T00:00":    "1970-01-01 00:00:00",
		"2199-12-31T23:59:59": "2199-12-31 23:59:59",
		"2019-05-05T10:00":    "2019-05-05 10:00:00",
		"2019-05-05T10:00:09": "2019-05-05 10:00:09",
		"2000-02-29T00:00":    "2000-02-29 00:00:00",
		"2024-02-29T00:00":    "2024-02-29 00:00:00",
	}
	for in, want := range valid {
		lt, ok := ParseAt(in)
		if got := lt.Time().Format(time.DateTime); !ok || got != want {
			t.Errorf("ParseAt(%q) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"", "2019-05-05", "2019-05-05T10:00:0", "2019-05-05T10:00:", "2019-05-05T10:00:000",
		"2019-05-05T10:00-00", "2019-05-05T10-00", "2019-05-05 10:00", "2019/05/05T10:00",
		"-019-05-05T10:00", "+019-05-05T10:00", "2019-05-05T-1:00", "2019-05-05T1 :00",
		"2019-05-05T10:0a", "2019-0x-05T10:00", "2019-05-05T10:00\x00", "２019-05-05T10:00",
		"1969-12-31T23:59:59", "2200-01-01T00:00", "0000-01-01T00:00", "9999-01-01T00:00",
		"2023-02-29T00:00", "1900-02-29T00:00", "2019-06-31T00:00", "2019-05-32T00:00",
		"2019-05-05T23:59:60", "2019-05-05T23:60", "2019-05-05T24:00:00", "2019-05-05T99:00",
	} {
		if lt, ok := ParseAt(in); ok {
			t.Errorf("ParseAt(%q) = %v, want rejection", in, lt)
		}
	}
}

func TestParseN(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "9": 9, "01": 1, "001": 1, "050": 50, "99": 99, "100": 100} {
		if got, ok := ParseN(in); !ok || got != want {
			t.Errorf("ParseN(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0", "00", "000", "101", "199", "999", "0001", "1000", "-1", "+1", " 1", "1 ", "1_0", "1.", "1e2", "٥", "５", "\x001"} {
		if got, ok := ParseN(in); ok {
			t.Errorf("ParseN(%q) = %d, want rejection", in, got)
		}
	}
}

func TestQueryValue(t *testing.T) {
	type res struct {
		value         string
		present, okay bool
	}
	for _, c := range []struct {
		raw  string
		want res
	}{
		{"", res{"", false, true}},
		{"n=5", res{"5", true, true}},
		{"n", res{"", true, true}},
		{"n=", res{"", true, true}},
		{"&&n=5&", res{"5", true, true}},
		{"foo=1&n=5&bar", res{"5", true, true}},
		{"n=a=b", res{"a=b", true, true}},
		{"n=+5", res{" 5", true, true}},
		{"n=%35", res{"5", true, true}},
		{"%6E=5", res{"5", true, true}},            // encoded key
		{"n+=5&n%20=6", res{"", false, true}},      // keys "n " are not n
		{"N=5", res{"", false, true}},              // keys are case-sensitive
		{"n=5;x=1", res{"5;x=1", true, true}},      // ';' is not a separator
		{"foo=%ZZ&n=5", res{"5", true, true}},      // bad escape elsewhere: ignored
		{"%ZZ=1&n%ZZ=2&n=5", res{"5", true, true}}, // undecodable keys are not n
		{"n=%ZZ", res{"", true, false}},            // bad escape in n
		{"n=%5", res{"", true, false}},             // truncated escape
		{"n=1&n=2", res{"", true, false}},          // twice
		{"n=&n=", res{"", true, false}},            // twice, both empty
		{"n&n", res{"", true, false}},              // twice, no '='
		{"n=5&%6E=5", res{"", true, false}},        // twice, once encoded
		{"n=%ZZ&n=%ZZ", res{"", true, false}},      // twice and bad
		{"at=2019-05-05T10:00&n=1", res{"1", true, true}},
	} {
		v, p, ok := QueryValue(c.raw, "n")
		if got := (res{v, p, ok}); got != c.want {
			t.Errorf("QueryValue(%q) = %+v, want %+v", c.raw, got, c.want)
		}
	}
}

const goodCalendar = `# test calendar
# range: 2019-01-01 2019-12-31

2019-01-01
2019-05-01
`

func TestParseCalendar(t *testing.T) {
	cal, err := ParseCalendar(strings.NewReader(goodCalendar))
	if err != nil {
		t.Fatal(err)
	}
	if cal.Len() != 2 || cal.First != DateOf(2019, 1, 1) || cal.Last != DateOf(2019, 12, 31) {
		t.Fatalf("got %d days, range %s..%s", cal.Len(), cal.First, cal.Last)
	}
	// CRLF line ends are accepted.
	if _, err := ParseCalendar(strings.NewReader(strings.ReplaceAll(goodCalendar, "\n", "\r\n"))); err != nil {
		t.Errorf("CRLF: %v", err)
	}
	for name, c := range map[string]struct{ text, err string }{
		"no range":      {"2019-01-01\n", "no \"# range"},
		"two ranges":    {"# range: 2019-01-01 2019-12-31\n# range: 2019-01-01 2019-12-31\n", "line 2: second"},
		"range fields":  {"# range: 2019-01-01\n", "line 1: want"},
		"range order":   {"# range: 2019-12-31 2019-01-01\n", "line 1: bad range"},
		"range date":    {"# range: 2019-01-01 2019-13-01\n", "line 1: bad range"},
		"bad date":      {"# range: 2019-01-01 2019-12-31\n2019-02-30\n", "line 2: \"2019-02-30\" is not"},
		"junk":          {"# range: 2019-01-01 2019-12-31\n2019-01-01 x\n", "line 2:"},
		"outside range": {"# range: 2019-01-01 2019-12-31\n2020-01-01\n", "line 2: 2020-01-01 is outside"},
		"weekend":       {"# range: 2019-01-01 2019-12-31\n2019-05-05\n", "line 2: 2019-05-05 is a Sunday"},
		"duplicate":     {"# range: 2019-01-01 2019-12-31\n2019-05-01\n2019-05-01\n", "line 3: 2019-05-01 is listed twice"},
	} {
		_, err := ParseCalendar(strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.err)
		}
	}
}

func TestLoadCalendarErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.txt")
	_, err := LoadCalendar(missing)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), CalendarEnv) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("2019-01-01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadCalendar(bad)
	if err == nil || !strings.Contains(err.Error(), CalendarEnv+"="+bad) {
		t.Errorf("bad file: %v", err)
	}
}

func TestTradingDayBoundaries(t *testing.T) {
	cal, err := ParseCalendar(strings.NewReader(goodCalendar))
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) LocalTime {
		lt, ok := ParseAt(s)
		if !ok {
			t.Fatalf("ParseAt(%q)", s)
		}
		return lt
	}
	for in, want := range map[string]string{
		"2019-04-30T00:00":    "2019-04-30", // Tuesday, midnight
		"2019-04-30T15:00:00": "2019-04-30", // the close belongs to the day
		"2019-04-30T15:00:01": "2019-05-02", // next day; 05-01 is listed
		"2019-04-30T23:59:59": "2019-05-02",
		"2019-05-01T09:00":    "2019-05-02", // listed holiday
		"2019-05-03T15:00:01": "2019-05-06", // Friday after close
		"2019-05-04T10:00":    "2019-05-06", // Saturday
		"2018-12-31T15:00:01": "2019-01-02", // across the range start, 01-01 listed
		"2018-12-28T15:00:01": "2018-12-31", // before the range: weekends only
		"2019-12-31T15:00:01": "2020-01-01", // after the range: weekends only
		"1970-01-01T00:00":    "1970-01-01", // a Thursday
		"2199-12-31T15:00:01": "2200-01-01", // Tuesday -> Wednesday
	} {
		if got := cal.TradingDay(at(in)).String(); got != want {
			t.Errorf("TradingDay(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestSharedCalendarFile(t *testing.T) {
	cal, err := LoadCalendar("../../../contracts/calendar/xshg-non-trading-weekdays.txt")
	if err != nil {
		t.Fatal(err)
	}
	if cal.First != DateOf(2007, 1, 1) || cal.Last != DateOf(2026, 12, 31) || cal.Len() < 300 {
		t.Errorf("range %s..%s, %d days", cal.First, cal.Last, cal.Len())
	}
}

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	c, err := configFrom(env(map[string]string{"PORT": "8101", CalendarEnv: "/c.txt"}))
	if err != nil || c.Addr != "0.0.0.0:8101" || c.Workers != 0 || c.CalendarPath != "/c.txt" {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	c, err = configFrom(env(map[string]string{"PORT": "8101", "HOST": "::1", "WORKERS": "3", CalendarEnv: "/c.txt"}))
	if err != nil || c.Addr != "[::1]:8101" || c.Workers != 3 {
		t.Errorf("set: %+v, %v", c, err)
	}
	for _, m := range []map[string]string{
		{CalendarEnv: "/c.txt"},
		{"PORT": "http", CalendarEnv: "/c.txt"},
		{"PORT": "70000", CalendarEnv: "/c.txt"},
		{"PORT": "8101"},
		{"PORT": "8101", CalendarEnv: "/c.txt", "WORKERS": "0"},
		{"PORT": "8101", CalendarEnv: "/c.txt", "WORKERS": "two"},
	} {
		if c, err := configFrom(env(m)); err == nil {
			t.Errorf("%v: accepted as %+v", m, c)
		}
	}
}
