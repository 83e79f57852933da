package contract

import "time"

// Shanghai is the exchange's local time: Asia/Shanghai has been a fixed
// UTC+08:00 without daylight saving since 1991, and the contract defines it
// as exactly that, so no time-zone database is needed.
var Shanghai = time.FixedZone("UTC+08:00", 8*60*60)

// Date is a calendar day, counted in days since 1970-01-01.
type Date int64

// DateOf returns the Date of a proleptic Gregorian year, month and day.
// The arguments must form a real date.
func DateOf(year int, month time.Month, day int) Date {
	// Howard Hinnant's days_from_civil: exact integer arithmetic, no time.Time.
	y := int64(year)
	m := int64(month)
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return Date(era*146097 + doe - 719468)
}

// Civil returns the year, month and day of d.
func (d Date) Civil() (year int, month time.Month, day int) {
	// Howard Hinnant's civil_from_days.
	z := int64(d) + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	dd := doy - (153*mp+2)/5 + 1
	mm := mp + 3
	if mm > 12 {
		mm -= 12
	}
	y := yoe + era*400
	if mm <= 2 {
		y++
	}
	return int(y), time.Month(mm), int(dd)
}

// Weekday returns the day of the week of d (1970-01-01 was a Thursday).
func (d Date) Weekday() time.Weekday {
	return time.Weekday(floorMod(int64(d)+4, 7))
}

// IsWeekend reports whether d is a Saturday or a Sunday.
func (d Date) IsWeekend() bool {
	wd := d.Weekday()
	return wd == time.Saturday || wd == time.Sunday
}

// Append appends d as YYYY-MM-DD to b. Years are written with four digits,
// which covers every date the contract can produce.
func (d Date) Append(b []byte) []byte {
	y, m, dd := d.Civil()
	return append(b,
		byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10),
		'-', byte('0'+int(m)/10), byte('0'+int(m)%10),
		'-', byte('0'+dd/10), byte('0'+dd%10))
}

// String returns d as YYYY-MM-DD.
func (d Date) String() string {
	return string(d.Append(make([]byte, 0, 10)))
}

// LocalTime is a wall-clock time in exchange local time, to whole seconds.
type LocalTime struct {
	Date    Date
	Seconds int // seconds since local midnight, 0..86399
}

// LocalTimeOf returns the exchange local time of the instant t, truncated
// to whole seconds (15:00:00.999 is still 15:00:00).
func LocalTimeOf(t time.Time) LocalTime {
	l := t.In(Shanghai)
	y, m, d := l.Date()
	hh, mm, ss := l.Clock()
	return LocalTime{Date: DateOf(y, m, d), Seconds: hh*3600 + mm*60 + ss}
}

// Time returns lt as an instant in the Shanghai zone.
func (lt LocalTime) Time() time.Time {
	y, m, d := lt.Date.Civil()
	return time.Date(y, m, d, 0, 0, lt.Seconds, 0, Shanghai)
}

func daysIn(year int, month time.Month) int {
	switch month {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	default:
		return 31
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	return a - floorDiv(a, b)*b
}
