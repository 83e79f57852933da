//! The serverlab contract (contracts/README.md) without HTTP: strict parsing
//! of `n` and `at`, the workday rule over the calendar file, the hello text.
//!
//! The same logic as the Go stacks' `servers/_shared/go` (module
//! `serverlab/contract`), written for Rust with the standard library only:
//! exact integer date arithmetic (Howard Hinnant's civil-date algorithms) and
//! a fixed UTC+08:00 exchange time, so neither chrono nor a time-zone
//! database is needed. axum's HTTP layer is in `app.rs`.

use std::borrow::Cow;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// The exact Content-Type of every 200 and 400 response.
pub const CONTENT_TYPE: &str = "text/plain; charset=utf-8";
/// The 400 body for a bad `n`, verbatim from the contract.
pub const BAD_N: &str = "n must be an integer between 1 and 100";
/// The 400 body for a bad `at`, verbatim from the contract.
pub const BAD_AT: &str = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]";
/// The Allow header of a 405 on a known route.
pub const ALLOW: &str = "GET, HEAD";
/// The largest `n` the contract accepts.
pub const MAX_KB: usize = 100;
/// The environment variable that names the calendar file.
pub const CALENDAR_ENV: &str = "WORKDAY_CALENDAR";

/// 15:00:00, the close of a trading day: a time at or before it belongs to
/// that day, from 15:00:01 on to the next trading day.
const CLOSE_SECONDS: u32 = 15 * 3600;
/// Asia/Shanghai is a fixed UTC+08:00 (no daylight saving since 1991).
const SHANGHAI_OFFSET_SECONDS: i64 = 8 * 3600;
const SECONDS_PER_DAY: i64 = 86_400;

/// MAX_KB * 1000 ASCII 'X' bytes in the read-only data segment; every n-KB
/// body is a prefix of it (the contract allows pre-built bodies).
static XS: [u8; MAX_KB * 1000] = [b'X'; MAX_KB * 1000];

/// The n-KB body: exactly n * 1000 bytes of 'X', for n in 1..=MAX_KB.
pub fn kb(n: usize) -> &'static [u8] {
    &XS[..n * 1000]
}

// -- dates ----------------------------------------------------------------------

/// A calendar day, counted in days since 1970-01-01 (proleptic Gregorian).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(pub i64);

impl Date {
    /// The Date of a real year, month (1..=12) and day.
    pub fn from_civil(year: i64, month: u32, day: u32) -> Date {
        // Howard Hinnant's days_from_civil.
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (i64::from(month) + 9) % 12;
        let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        Date(era * 146_097 + doe - 719_468)
    }

    /// Year, month (1..=12) and day of the date.
    pub fn civil(self) -> (i64, u32, u32) {
        // Howard Hinnant's civil_from_days.
        let z = self.0 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }

    /// Day of the week, 0 = Sunday .. 6 = Saturday (1970-01-01 was a Thursday).
    pub fn weekday(self) -> u32 {
        (self.0 + 4).rem_euclid(7) as u32
    }

    pub fn is_weekend(self) -> bool {
        matches!(self.weekday(), 0 | 6)
    }

    /// The date as YYYY-MM-DD; years have four digits, which covers every
    /// date the contract can produce (1970..=2199 and a few days after).
    pub fn to_bytes(self) -> [u8; 10] {
        let (y, m, d) = self.civil();
        let y = y as u32;
        [
            digit(y / 1000),
            digit(y / 100),
            digit(y / 10),
            digit(y),
            b'-',
            digit(m / 10),
            digit(m),
            b'-',
            digit(d / 10),
            digit(d),
        ]
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // to_bytes writes ASCII digits and '-' only.
        f.write_str(std::str::from_utf8(&self.to_bytes()).unwrap_or("????-??-??"))
    }
}

/// The last decimal digit of v as an ASCII byte.
fn digit(v: u32) -> u8 {
    b'0' + (v % 10) as u8
}

fn days_in(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A wall-clock time in exchange local time, to whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalTime {
    pub date: Date,
    /// Seconds since local midnight, 0..=86399.
    pub seconds: u32,
}

impl LocalTime {
    /// The exchange local time of an instant given as Unix seconds
    /// (whole seconds: 15:00:00.999 is still 15:00:00).
    pub fn from_unix(unix_seconds: i64) -> LocalTime {
        let local = unix_seconds + SHANGHAI_OFFSET_SECONDS;
        LocalTime {
            date: Date(local.div_euclid(SECONDS_PER_DAY)),
            seconds: local.rem_euclid(SECONDS_PER_DAY) as u32,
        }
    }

    /// The instant of this local time, as Unix seconds.
    pub fn to_unix(self) -> i64 {
        self.date.0 * SECONDS_PER_DAY + i64::from(self.seconds) - SHANGHAI_OFFSET_SECONDS
    }
}

/// Whole seconds since the Unix epoch (rounded down, also before 1970) and
/// the milliseconds within that second.
fn unix_parts(now: SystemTime) -> (i64, u32) {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        Err(before) => {
            let d = before.duration();
            match d.subsec_nanos() {
                0 => (-(d.as_secs() as i64), 0),
                n => (-(d.as_secs() as i64) - 1, (1_000_000_000 - n) / 1_000_000),
            }
        }
    }
}

// -- parameters -----------------------------------------------------------------

/// A run of ASCII digits ('0'..='9' only: no sign, no space, no other
/// Unicode digit) as a number; None for anything else or an empty input.
fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 9 {
        return None;
    }
    s.iter().try_fold(0u32, |v, &c| {
        c.is_ascii_digit().then(|| v * 10 + u32::from(c - b'0'))
    })
}

/// Parses `n`: one to three ASCII digits with a value of 1..=100. Leading
/// zeros are allowed ("007"); signs, spaces, underscores, other Unicode
/// digits and four or more digits are not.
pub fn parse_n(s: &[u8]) -> Option<usize> {
    if s.len() > 3 {
        return None;
    }
    match digits(s)? {
        v @ 1..=100 => Some(v as usize),
        _ => None,
    }
}

/// Parses exactly YYYY-MM-DD with ASCII digits into a real date.
fn parse_date(s: &[u8]) -> Option<Date> {
    if s.len() != 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let y = i64::from(digits(&s[0..4])?);
    let m = digits(&s[5..7])?;
    let d = digits(&s[8..10])?;
    if !(1..=12).contains(&m) || d < 1 || d > days_in(y, m) {
        return None;
    }
    Some(Date::from_civil(y, m, d))
}

/// Parses `at`: exactly YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS in exchange
/// local time, ASCII digits only, year 1970..=2199, a real date, hour
/// 0..=23, minute and second 0..=59. No offset, no fraction, no leap second.
pub fn parse_at(s: &[u8]) -> Option<LocalTime> {
    if s.len() != 16 && s.len() != 19 {
        return None;
    }
    if s[10] != b'T' || s[13] != b':' || (s.len() == 19 && s[16] != b':') {
        return None;
    }
    let date = parse_date(&s[..10])?;
    if !(1970..=2199).contains(&date.civil().0) {
        return None;
    }
    let hh = digits(&s[11..13])?;
    let mm = digits(&s[14..16])?;
    let ss = if s.len() == 19 {
        digits(&s[17..19])?
    } else {
        0
    };
    if hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    Some(LocalTime {
        date,
        seconds: hh * 3600 + mm * 60 + ss,
    })
}

/// What the query string says about one parameter.
#[derive(Debug, PartialEq, Eq)]
pub enum Param<'a> {
    /// Not given.
    Absent,
    /// Given once; the decoded value (bytes: the decoding need not be UTF-8,
    /// and the parsers accept ASCII only anyway).
    Value(Cow<'a, [u8]>),
    /// Must be answered with 400: given twice (even with equal or empty
    /// values), or its value is not valid percent-encoding.
    Invalid,
}

/// Looks `name` up in a raw (still percent-encoded) query string, decoded as
/// application/x-www-form-urlencoded: pairs separated by '&' only (';' is an
/// ordinary character, as in the WHATWG URL standard), '+' is a space, `%XX`
/// a byte, a pair without '=' has an empty value. Other parameters are
/// ignored, even when their encoding is invalid.
pub fn query_param<'a>(raw_query: &'a str, name: &str) -> Param<'a> {
    let mut found: Option<&'a str> = None;
    for pair in raw_query.split('&') {
        if pair.is_empty() {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != name {
            // Only an encoded key ("%6E", "n+" ...) can still decode to name.
            if !key.contains(['%', '+']) {
                continue;
            }
            match form_decode(key) {
                Some(k) if *k == *name.as_bytes() => {}
                _ => continue,
            }
        }
        if found.is_some() {
            return Param::Invalid;
        }
        found = Some(value);
    }
    match found {
        None => Param::Absent,
        Some(raw) => form_decode(raw).map_or(Param::Invalid, Param::Value),
    }
}

/// x-www-form-urlencoded decoding of one key or value: '+' is a space and
/// `%XX` (two hex digits) a byte; a '%' not followed by two hex digits is an
/// error. Borrows when there is nothing to decode.
fn form_decode(s: &str) -> Option<Cow<'_, [u8]>> {
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&c| c == b'%' || c == b'+') {
        return Some(Cow::Borrowed(bytes));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hi = bytes.get(i + 1).copied().and_then(hex)?;
                let lo = bytes.get(i + 2).copied().and_then(hex)?;
                out.push(hi << 4 | lo);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Some(Cow::Owned(out))
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

// -- the calendar ---------------------------------------------------------------

/// The exchange's non-trading weekdays between `first` and `last` (the
/// file's "# range:" line); outside that range only weekends are
/// non-trading. Read-only after loading, shared by every worker thread.
#[derive(Debug)]
pub struct Calendar {
    pub first: Date,
    pub last: Date,
    closed: Vec<bool>, // indexed by day - first
    count: usize,
}

impl Calendar {
    /// Reads the calendar file at `path`, once, at start-up; per-request
    /// work never touches the file. Errors name WORKDAY_CALENDAR and the path.
    pub fn load(path: &str) -> Result<Calendar, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{CALENDAR_ENV}={path}: cannot read calendar: {e}"))?;
        Calendar::parse(&text).map_err(|e| format!("{CALENDAR_ENV}={path}: {e}"))
    }

    /// Parses a calendar: "#" comment lines, one of which is
    /// "# range: FIRST LAST", and one YYYY-MM-DD non-trading weekday a line.
    /// Blank lines are ignored; anything else is an error naming the line,
    /// so a damaged file stops the server at start-up instead of giving
    /// wrong answers.
    pub fn parse(text: &str) -> Result<Calendar, String> {
        let mut range: Option<(Date, Date)> = None;
        let mut days: Vec<(usize, Date)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                let Some(rest) = comment.trim().strip_prefix("range:") else {
                    continue;
                };
                if range.is_some() {
                    return Err(format!("line {n}: second \"# range:\" line"));
                }
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let [first, last] = fields[..] else {
                    return Err(format!(
                        "line {n}: want \"# range: FIRST LAST\", got {line:?}"
                    ));
                };
                match (parse_date(first.as_bytes()), parse_date(last.as_bytes())) {
                    (Some(f), Some(l)) if f <= l => range = Some((f, l)),
                    _ => return Err(format!("line {n}: bad range {:?}", rest.trim())),
                }
                continue;
            }
            let day = parse_date(line.as_bytes())
                .ok_or_else(|| format!("line {n}: {line:?} is not a YYYY-MM-DD date"))?;
            days.push((n, day));
        }
        let (first, last) = range.ok_or("no \"# range: FIRST LAST\" line")?;
        let mut closed = vec![false; (last.0 - first.0 + 1) as usize];
        for &(n, day) in &days {
            if day < first || day > last {
                return Err(format!(
                    "line {n}: {day} is outside the range {first}..{last}"
                ));
            }
            if day.is_weekend() {
                return Err(format!(
                    "line {n}: {day} is a weekend day; the file lists weekdays only"
                ));
            }
            let slot = &mut closed[(day.0 - first.0) as usize];
            if *slot {
                return Err(format!("line {n}: {day} is listed twice"));
            }
            *slot = true;
        }
        Ok(Calendar {
            first,
            last,
            closed,
            count: days.len(),
        })
    }

    /// The number of non-trading weekdays in the file.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Monday to Friday and not a listed non-trading day.
    pub fn is_trading_day(&self, d: Date) -> bool {
        if d.is_weekend() {
            return false;
        }
        d < self.first || d > self.last || !self.closed[(d.0 - self.first.0) as usize]
    }

    /// The trading day `lt` belongs to: its own date if that is a trading
    /// day and `lt` is at or before 15:00:00, else the first trading day after.
    pub fn trading_day(&self, lt: LocalTime) -> Date {
        if lt.seconds <= CLOSE_SECONDS && self.is_trading_day(lt.date) {
            return lt.date;
        }
        // Ends within days: the longest closure (Spring Festival) is about two weeks.
        let mut d = Date(lt.date.0 + 1);
        while !self.is_trading_day(d) {
            d.0 += 1;
        }
        d
    }
}

// -- the two routes -------------------------------------------------------------

/// A contract answer: 200 or 400 and its body. The HTTP layer adds the
/// Content-Type, Content-Length and Date.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// 200 with a body built for this request (hello text, trading day).
    Ok(Vec<u8>),
    /// 200 with a pre-built n-KB body.
    OkStatic(&'static [u8]),
    /// 400 with one of the contract's error texts.
    BadRequest(&'static str),
}

/// Answers the two routes. Safe for concurrent use; one per process.
#[derive(Debug)]
pub struct Service {
    hello_prefix: String,
    calendar: Calendar,
}

/// Length of "YYYY-MM-DD HH:MM:SS.mmm".
const HELLO_TIME_LEN: usize = 23;

impl Service {
    /// The service of the stack named `display_name` (server.toml's
    /// display_name, used verbatim in the hello body).
    pub fn new(display_name: &str, calendar: Calendar) -> Service {
        Service {
            hello_prefix: format!("Hello World, from {display_name}! "),
            calendar,
        }
    }

    pub fn calendar(&self) -> &Calendar {
        &self.calendar
    }

    /// "Hello World, from <name>! YYYY-MM-DD HH:MM:SS.mmm", UTC, always
    /// three millisecond digits, formatted for every request.
    pub fn hello(&self, now: SystemTime) -> Vec<u8> {
        let (secs, millis) = unix_parts(now);
        let date = Date(secs.div_euclid(SECONDS_PER_DAY));
        let s = secs.rem_euclid(SECONDS_PER_DAY) as u32;
        let mut b = Vec::with_capacity(self.hello_prefix.len() + HELLO_TIME_LEN);
        b.extend_from_slice(self.hello_prefix.as_bytes());
        b.extend_from_slice(&date.to_bytes());
        let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
        b.extend_from_slice(&[
            b' ',
            digit(h / 10),
            digit(h),
            b':',
            digit(m / 10),
            digit(m),
            b':',
            digit(s / 10),
            digit(s),
            b'.',
            digit(millis / 100),
            digit(millis / 10),
            digit(millis),
        ]);
        b
    }

    /// "/": the hello text without `n` (or with an empty `n`), the n-KB body
    /// for a valid `n`, 400 otherwise. Other parameters are ignored.
    pub fn root(&self, raw_query: Option<&str>, now: SystemTime) -> Answer {
        match query_param(raw_query.unwrap_or(""), "n") {
            Param::Absent => Answer::Ok(self.hello(now)),
            Param::Value(v) if v.is_empty() => Answer::Ok(self.hello(now)),
            Param::Value(v) => {
                parse_n(&v).map_or(Answer::BadRequest(BAD_N), |n| Answer::OkStatic(kb(n)))
            }
            Param::Invalid => Answer::BadRequest(BAD_N),
        }
    }

    /// "/workday": the trading day of now, or of the local time in `at`;
    /// 400 for an invalid or empty `at`. Other parameters are ignored.
    pub fn workday(&self, raw_query: Option<&str>, now: SystemTime) -> Answer {
        let lt = match query_param(raw_query.unwrap_or(""), "at") {
            Param::Absent => LocalTime::from_unix(unix_parts(now).0),
            Param::Value(v) => match parse_at(&v) {
                Some(lt) => lt,
                None => return Answer::BadRequest(BAD_AT),
            },
            Param::Invalid => return Answer::BadRequest(BAD_AT),
        };
        Answer::Ok(self.calendar.trading_day(lt).to_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(unix: i64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(unix as u64) + Duration::from_millis(millis)
    }

    #[test]
    fn civil_round_trip() {
        for days in -800_000..800_000 {
            let d = Date(days);
            let (y, m, dd) = d.civil();
            assert_eq!(Date::from_civil(y, m, dd), d, "{y}-{m}-{dd}");
        }
        assert_eq!(Date::from_civil(1970, 1, 1), Date(0));
        assert_eq!(Date(0).weekday(), 4);
        assert_eq!(Date::from_civil(2019, 5, 5).weekday(), 0);
        assert_eq!(Date::from_civil(2000, 2, 29).to_string(), "2000-02-29");
    }

    #[test]
    fn hello_body() {
        let cal = Calendar::parse("# range: 2020-01-01 2020-01-31\n").unwrap();
        let svc = Service::new("Rust axum", cal);
        // 2024-01-02 03:04:05 UTC = 1704164645
        for (millis, want) in [(0, "000"), (7, "007"), (120, "120"), (999, "999")] {
            let body = svc.hello(at(1_704_164_645, millis));
            assert_eq!(
                String::from_utf8(body).unwrap(),
                format!("Hello World, from Rust axum! 2024-01-02 03:04:05.{want}")
            );
        }
    }

    #[test]
    fn before_1970() {
        let t = UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(unix_parts(t), (-2, 500));
        assert_eq!(unix_parts(UNIX_EPOCH - Duration::from_secs(3)), (-3, 0));
    }

    #[test]
    fn local_time() {
        // 2019-04-30 07:00:00 UTC is 15:00:00 in Shanghai.
        let lt = LocalTime::from_unix(1_556_607_600);
        assert_eq!(lt.date.to_string(), "2019-04-30");
        assert_eq!(lt.seconds, CLOSE_SECONDS);
        assert_eq!(lt.to_unix(), 1_556_607_600);
    }

    #[test]
    fn query_decoding() {
        assert_eq!(query_param("", "n"), Param::Absent);
        assert_eq!(query_param("n", "n"), Param::Value(Cow::Borrowed(b"")));
        assert_eq!(query_param("%6E=5", "n"), Param::Value(Cow::Borrowed(b"5")));
        assert_eq!(query_param("n=1&n=1", "n"), Param::Invalid);
        assert_eq!(query_param("n=%ZZ", "n"), Param::Invalid);
        assert_eq!(
            query_param("x=%ZZ&n=2", "n"),
            Param::Value(Cow::Borrowed(b"2"))
        );
        assert_eq!(
            query_param("n=1;n=2", "n"),
            Param::Value(Cow::Borrowed(b"1;n=2"))
        );
        assert_eq!(
            query_param("n=+1", "n"),
            Param::Value(Cow::Owned(b" 1".to_vec()))
        );
        assert_eq!(
            query_param("n=%D9%A5", "n"),
            Param::Value(Cow::Owned(vec![0xD9, 0xA5]))
        );
    }

    #[test]
    fn calendar_errors() {
        for (text, want) in [
            ("2019-05-01\n", "no \"# range"),
            ("# range: 2019-01-01\n", "line 1: want"),
            ("# range: 2019-02-01 2019-01-01\n", "line 1: bad range"),
            (
                "# range: 2019-01-01 2019-12-31\n2019-05-04\n",
                "line 2: 2019-05-04 is a weekend day",
            ),
            (
                "# range: 2019-01-01 2019-12-31\n2019-05-01\n2019-05-01\n",
                "line 3: 2019-05-01 is listed twice",
            ),
            (
                "# range: 2019-01-01 2019-12-31\n2020-05-01\n",
                "outside the range",
            ),
            (
                "# range: 2019-01-01 2019-12-31\nmay day\n",
                "line 2: \"may day\" is not",
            ),
        ] {
            let err = Calendar::parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
