package contract

import (
	"bytes"
	"net/url"
	"strings"
	"time"
)

// ParseAt parses the at parameter: exactly YYYY-MM-DDTHH:MM or
// YYYY-MM-DDTHH:MM:SS in exchange local time, ASCII digits only, year
// 1970..2199, a real date, hour 0..23, minute and second 0..59. There is no
// offset, no fraction and no leap second. The shape is checked byte by byte
// rather than with time.Parse, which accepts more than the contract allows.
func ParseAt(s string) (LocalTime, bool) {
	if len(s) != 16 && len(s) != 19 {
		return LocalTime{}, false
	}
	if s[10] != 'T' || s[13] != ':' || (len(s) == 19 && s[16] != ':') {
		return LocalTime{}, false
	}
	d, ok := parseDate(s[:10])
	if !ok {
		return LocalTime{}, false
	}
	if y, _, _ := d.Civil(); y < 1970 || y > 2199 {
		return LocalTime{}, false
	}
	hh, ok1 := digits(s[11:13])
	mm, ok2 := digits(s[14:16])
	ss, ok3 := 0, true
	if len(s) == 19 {
		ss, ok3 = digits(s[17:19])
	}
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
		return LocalTime{}, false
	}
	return LocalTime{Date: d, Seconds: hh*3600 + mm*60 + ss}, true
}

// MaxKB is the largest n the contract accepts.
const MaxKB = 100

// ParseN parses the n parameter: 1 to 3 ASCII digits with a value of
// 1..100. Leading zeros are allowed ("007"); signs, spaces, underscores,
// other Unicode digits and 4 or more digits are not.
func ParseN(s string) (int, bool) {
	if len(s) > 3 {
		return 0, false
	}
	v, ok := digits(s)
	if !ok || v < 1 || v > MaxKB {
		return 0, false
	}
	return v, true
}

// xs holds MaxKB*1000 ASCII 'X' bytes, built once; every n-KB body is a
// prefix of it. It must never be written to.
var xs = bytes.Repeat([]byte{'X'}, MaxKB*1000)

// KB returns the n-KB body: exactly n*1000 bytes of ASCII 'X', for n in
// 1..MaxKB. The slice is shared and read-only.
func KB(n int) []byte {
	return xs[: n*1000 : n*1000]
}

// QueryValue looks the parameter name up in a raw (still percent-encoded)
// query string, decoded as application/x-www-form-urlencoded: pairs are
// separated by '&' only (a ';' is an ordinary character, as in the WHATWG
// URL standard, unlike url.ParseQuery), '+' is a space, and a pair without
// '=' has an empty value.
//
// It returns present=false when the parameter is absent. It returns
// ok=false when the request must be rejected: the parameter is given more
// than once (even with equal or empty values) or its value is not valid
// percent-encoding. Other parameters are ignored, even when their encoding
// is invalid.
func QueryValue(rawQuery, name string) (value string, present, ok bool) {
	raw := ""
	for q := rawQuery; q != ""; {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k != name {
			// Only an encoded key ("%6E", "n+"…) can still decode to name.
			if !strings.ContainsAny(k, "%+") {
				continue
			}
			if dk, err := url.QueryUnescape(k); err != nil || dk != name {
				continue
			}
		}
		if present {
			return "", true, false
		}
		present, raw = true, v
	}
	if !present {
		return "", false, true
	}
	value, err := url.QueryUnescape(raw)
	if err != nil {
		return "", true, false
	}
	return value, true, true
}

// Hello formats the hello body for one display name.
type Hello struct {
	prefix string
}

// NewHello returns the hello formatter for displayName.
func NewHello(displayName string) Hello {
	return Hello{prefix: "Hello World, from " + displayName + "! "}
}

// helloLayout is UTC to the millisecond, always three digits (".000", not
// ".999", which would drop trailing zeros).
const helloLayout = "2006-01-02 15:04:05.000"

// Body returns "Hello World, from <name>! YYYY-MM-DD HH:MM:SS.mmm" for the
// instant now, in UTC.
func (h Hello) Body(now time.Time) []byte {
	b := make([]byte, 0, len(h.prefix)+len(helloLayout))
	b = append(b, h.prefix...)
	return now.UTC().AppendFormat(b, helloLayout)
}
