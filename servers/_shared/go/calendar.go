package contract

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// CalendarEnv names the environment variable that holds the calendar path.
const CalendarEnv = "WORKDAY_CALENDAR"

// closeSeconds is 15:00:00, the close of a trading day. A time at or before
// it belongs to that day; from 15:00:01 on it belongs to the next one.
const closeSeconds = 15 * 3600

// Calendar knows the exchange's non-trading weekdays between First and Last
// (the file's "# range:" line). Outside that range only weekends are
// non-trading. A Calendar is read-only after loading and safe for
// concurrent use.
type Calendar struct {
	First, Last Date
	closed      []bool // indexed by day - First
	count       int
}

// LoadCalendar reads the calendar file at path. The file is read once, at
// start-up; per-request work never touches it.
func LoadCalendar(path string) (*Calendar, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read calendar: %w", CalendarEnv, err)
	}
	defer f.Close()
	cal, err := ParseCalendar(f)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", CalendarEnv, path, err)
	}
	return cal, nil
}

// ParseCalendar reads a calendar: "#" comment lines, one of which is
// "# range: FIRST LAST", and one YYYY-MM-DD non-trading weekday a line.
// Blank lines are ignored. Anything else is an error naming the line, so a
// damaged file stops the server at start-up instead of giving wrong answers.
func ParseCalendar(r io.Reader) (*Calendar, error) {
	var (
		haveRange   bool
		first, last Date
		days        []Date
		lines       []int
	)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		switch {
		case len(line) == 0:
		case line[0] == '#':
			rest, ok := bytes.CutPrefix(bytes.TrimSpace(line[1:]), []byte("range:"))
			if !ok {
				continue
			}
			if haveRange {
				return nil, fmt.Errorf("line %d: second \"# range:\" line", n)
			}
			f := strings.Fields(string(rest))
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: want \"# range: FIRST LAST\", got %q", n, line)
			}
			var ok1, ok2 bool
			first, ok1 = parseDate(f[0])
			last, ok2 = parseDate(f[1])
			if !ok1 || !ok2 || first > last {
				return nil, fmt.Errorf("line %d: bad range %q", n, rest)
			}
			haveRange = true
		default:
			d, ok := parseDate(string(line))
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not a YYYY-MM-DD date", n, line)
			}
			days = append(days, d)
			lines = append(lines, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !haveRange {
		return nil, errors.New("no \"# range: FIRST LAST\" line")
	}
	c := &Calendar{First: first, Last: last, closed: make([]bool, last-first+1)}
	for i, d := range days {
		switch {
		case d < first || d > last:
			return nil, fmt.Errorf("line %d: %s is outside the range %s..%s", lines[i], d, first, last)
		case d.IsWeekend():
			return nil, fmt.Errorf("line %d: %s is a %s; the file lists weekdays only", lines[i], d, d.Weekday())
		case c.closed[d-first]:
			return nil, fmt.Errorf("line %d: %s is listed twice", lines[i], d)
		}
		c.closed[d-first] = true
	}
	c.count = len(days)
	return c, nil
}

// Len returns the number of non-trading weekdays in the file.
func (c *Calendar) Len() int { return c.count }

// IsTradingDay reports whether d is a trading day: Monday to Friday and not
// a listed non-trading day.
func (c *Calendar) IsTradingDay(d Date) bool {
	if d.IsWeekend() {
		return false
	}
	return d < c.First || d > c.Last || !c.closed[d-c.First]
}

// TradingDay returns the trading day that lt belongs to: its own date if
// that is a trading day and lt is at or before 15:00:00, otherwise the first
// trading day after it.
func (c *Calendar) TradingDay(lt LocalTime) Date {
	d := lt.Date
	if lt.Seconds <= closeSeconds && c.IsTradingDay(d) {
		return d
	}
	// Terminates: the longest closure (Spring Festival) is a couple of weeks.
	for d++; !c.IsTradingDay(d); d++ {
	}
	return d
}

// TradingDayAt returns the trading day that the instant t belongs to.
func (c *Calendar) TradingDayAt(t time.Time) Date {
	return c.TradingDay(LocalTimeOf(t))
}

// parseDate parses exactly YYYY-MM-DD with ASCII digits into a real date.
func parseDate(s string) (Date, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) {
		return 0, false
	}
	return DateOf(y, time.Month(m), d), true
}

// digits parses a non-empty run of ASCII digits ('0'..'9' only; no sign,
// no space, no other Unicode digit).
func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}
