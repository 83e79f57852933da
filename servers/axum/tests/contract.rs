//! The stack against the contract, in-process: the shared vectors
//! (contracts/vectors/*.json) through the contract functions and through the
//! real server (axum's router on hyper's connections, over TCP), the exact
//! headers, HEAD, 404 and 405, keep-alive, HTTP/1.0 and Connection: close;
//! and the names and versions compiled in against server.toml and the lock
//! file. The black-box check of a running server is contracts/conformance
//! (`make check SERVERS=axum`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use serverlab_axum::app::{DISPLAY_NAME, router};
use serverlab_axum::contract::{
    ALLOW, Answer, BAD_AT, BAD_N, CONTENT_TYPE, Calendar, Date, MAX_KB, Service, kb, parse_at,
};
use serverlab_axum::server::{FRAMEWORK, listen, serve};

// -- shared data ------------------------------------------------------------------

fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("contracts/vectors/workday.json").is_file())
        .expect("contracts/vectors/workday.json above the stack folder")
        .to_path_buf()
}

fn calendar() -> Calendar {
    let path = repo_root().join("contracts/calendar/xshg-non-trading-weekdays.txt");
    Calendar::load(path.to_str().unwrap()).unwrap()
}

fn json(name: &str) -> Value {
    let text = std::fs::read_to_string(repo_root().join("contracts/vectors").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn cases(v: &Value) -> &Vec<Value> {
    v.as_array().expect("an array of cases")
}

fn field<'a>(case: &'a Value, name: &str) -> &'a str {
    case[name].as_str().unwrap_or("")
}

fn service() -> Service {
    Service::new(DISPLAY_NAME, calendar())
}

fn hello_prefix() -> String {
    format!("Hello World, from {DISPLAY_NAME}! ")
}

/// "YYYY-MM-DD HH:MM:SS.mmm" after the prefix, within 2 s of now.
fn is_fresh_hello(body: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    let Some(stamp) = text.strip_prefix(&hello_prefix()) else {
        return false;
    };
    let b = stamp.as_bytes();
    let shape = b.len() == 23
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b' ',
            13 | 16 => c == b':',
            19 => c == b'.',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return false;
    }
    let num = |r: std::ops::Range<usize>| stamp[r].parse::<i64>().unwrap();
    let date = Date::from_civil(num(0..4), num(5..7) as u32, num(8..10) as u32);
    let millis = (date.0 * 86_400 + num(11..13) * 3600 + num(14..16) * 60 + num(17..19)) * 1000
        + num(20..23);
    (millis - now_millis()).abs() < 2000
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

// -- the contract functions ---------------------------------------------------------

#[test]
fn workday_vectors() {
    let cal = calendar();
    let svc = service();
    let all = json("workday.json");
    let all = cases(&all["cases"]);
    assert!(all.len() >= 300, "only {} workday cases", all.len());
    for c in all {
        let (at, expect) = (field(c, "at"), field(c, "expect"));
        let lt = parse_at(at.as_bytes())
            .unwrap_or_else(|| panic!("parse_at({at}) rejected a valid time"));
        assert_eq!(
            cal.trading_day(lt).to_string(),
            expect,
            "{at} ({})",
            field(c, "note")
        );
        // The same through the request path, and through the instant path.
        let answer = svc.workday(Some(&format!("at={at}")), SystemTime::now());
        assert_eq!(answer, Answer::Ok(expect.as_bytes().to_vec()), "at={at}");
        let unix = lt.to_unix();
        let instant = if unix >= 0 {
            UNIX_EPOCH + Duration::from_secs(unix as u64)
        } else {
            UNIX_EPOCH - Duration::from_secs(unix.unsigned_abs())
        };
        let now = svc.workday(None, instant);
        assert_eq!(
            now,
            Answer::Ok(expect.as_bytes().to_vec()),
            "now = {at} in Shanghai"
        );
    }
}

#[test]
fn input_vectors() {
    let svc = service();
    let inputs = json("inputs.json");
    let now = SystemTime::now();
    for c in cases(&inputs["n"]["valid"]) {
        let n = c["kb"].as_u64().unwrap() as usize;
        assert_eq!(
            svc.root(Some(field(c, "raw")), now),
            Answer::OkStatic(kb(n)),
            "{c}"
        );
    }
    for c in cases(&inputs["n"]["hello"]) {
        match svc.root(Some(field(c, "raw")), SystemTime::now()) {
            Answer::Ok(body) => assert!(
                is_fresh_hello(&body),
                "{c}: {}",
                String::from_utf8_lossy(&body)
            ),
            other => panic!("{c}: {other:?}"),
        }
    }
    for c in cases(&inputs["n"]["invalid"]) {
        assert_eq!(
            svc.root(Some(field(c, "raw")), now),
            Answer::BadRequest(BAD_N),
            "{c}"
        );
    }
    for c in cases(&inputs["at"]["valid"]) {
        let want = Answer::Ok(field(c, "expect").as_bytes().to_vec());
        assert_eq!(svc.workday(Some(field(c, "raw")), now), want, "{c}");
    }
    for c in cases(&inputs["at"]["invalid"]) {
        assert_eq!(
            svc.workday(Some(field(c, "raw")), now),
            Answer::BadRequest(BAD_AT),
            "{c}"
        );
    }
}

#[test]
fn workday_now_at_the_close() {
    let svc = service();
    let shanghai = |y: i64, mo: u32, d: u32, h: i64, mi: i64, s: i64| {
        Date::from_civil(y, mo, d).0 * 86_400 + h * 3600 + mi * 60 + s - 8 * 3600
    };
    for (unix, nanos, want) in [
        (shanghai(2019, 4, 30, 15, 0, 0), 0, "2019-04-30"),
        // Whole seconds: the fraction of 15:00:00 is still 15:00:00.
        (shanghai(2019, 4, 30, 15, 0, 0), 999_999_999, "2019-04-30"),
        (shanghai(2019, 4, 30, 15, 0, 1), 0, "2019-05-06"),
        (shanghai(2019, 5, 5, 0, 30, 0), 0, "2019-05-06"), // Sunday
        (shanghai(2019, 5, 6, 0, 0, 0), 0, "2019-05-06"),  // Monday midnight
    ] {
        let now = UNIX_EPOCH + Duration::new(unix as u64, nanos);
        assert_eq!(
            svc.workday(None, now),
            Answer::Ok(want.as_bytes().to_vec()),
            "{unix}.{nanos}"
        );
    }
}

#[test]
fn kb_bodies() {
    for n in 1..=MAX_KB {
        let body = kb(n);
        assert!(
            body.len() == n * 1000 && body.iter().all(|&c| c == b'X'),
            "kb({n})"
        );
    }
}

// -- names and versions --------------------------------------------------------------

fn manifest_string(key: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("server.toml")).unwrap();
    text.lines()
        .find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().split('"').nth(1).unwrap_or("").to_string())
        })
        .unwrap_or_else(|| panic!("server.toml has no {key}"))
}

fn locked_version(package: &str) -> String {
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let header = format!("name = \"{package}\"\nversion = \"");
    let start = lock
        .find(&header)
        .unwrap_or_else(|| panic!("{package} not in Cargo.lock"))
        + header.len();
    lock[start..].split('"').next().unwrap().to_string()
}

#[test]
fn display_name_matches_manifest() {
    assert_eq!(manifest_string("display_name"), DISPLAY_NAME);
}

#[test]
fn versions_match_manifest_and_lock() {
    let axum = locked_version("axum");
    assert_eq!(
        manifest_string("framework_version"),
        axum,
        "server.toml framework_version"
    );
    assert_eq!(FRAMEWORK, format!("axum {axum}"), "server::FRAMEWORK");
    // Every dependency in Cargo.toml is an exact version, equal to the lock's.
    let toml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut section = "";
    for line in toml.lines() {
        let line = line.split('#').next().unwrap().trim();
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if !section.contains("dependencies") || line.is_empty() {
            continue;
        }
        let (name, spec) = line.split_once('=').unwrap();
        let version = spec.split('"').nth(1).unwrap_or("");
        let exact = version
            .strip_prefix('=')
            .unwrap_or_else(|| panic!("{name}: {version:?} is not =x.y.z"));
        assert_eq!(
            exact,
            locked_version(name.trim()),
            "{name} in Cargo.toml and Cargo.lock"
        );
    }
}

// -- through the real server -----------------------------------------------------------

/// One server for every HTTP test: the production serve loop on an
/// ephemeral port, on its own tokio runtime in a background thread.
fn server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = router(Arc::new(service()));
                serve(listener, app, std::future::pending()).await.unwrap();
            });
        });
        rx.recv().unwrap()
    })
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    /// Every value of a header (names compared case-insensitively).
    fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.all(name).first().copied()
    }
}

/// A raw HTTP/1.1 client on one connection, so that framing (Content-Length,
/// no chunking) is seen exactly as sent.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect() -> Client {
        let stream = TcpStream::connect(server()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Client {
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, raw: &str) {
        self.reader.get_mut().write_all(raw.as_bytes()).unwrap();
    }

    fn request(&mut self, method: &str, target: &str) -> Response {
        self.send(&format!("{method} {target} HTTP/1.1\r\nHost: test\r\n\r\n"));
        self.response(method == "HEAD")
    }

    fn response(&mut self, head: bool) -> Response {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let field = line.trim_end_matches(['\r', '\n']);
            if field.is_empty() {
                break;
            }
            let (k, v) = field.split_once(':').unwrap();
            headers.push((k.to_string(), v.trim().to_string()));
        }
        let mut response = Response {
            status,
            headers,
            body: Vec::new(),
        };
        let length: usize = response
            .get("content-length")
            .map_or(0, |v| v.parse().unwrap());
        if !head {
            response.body.resize(length, 0);
            self.reader.read_exact(&mut response.body).unwrap();
        }
        response
    }

    /// True when the server has closed the connection (EOF).
    fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.reader.read(&mut byte), Ok(0))
    }
}

/// Seconds since the epoch of an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT").
fn imf_fixdate(v: &str) -> Option<i64> {
    let f: Vec<&str> = v.split(' ').collect();
    if f.len() != 6
        || f[5] != "GMT"
        || !f[0].ends_with(',')
        || f[1].len() != 2
        || f[3].len() != 4
        || f[4].len() != 8
    {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == f[2])? as u32 + 1;
    let date = Date::from_civil(f[3].parse().ok()?, month, f[1].parse().ok()?);
    let t: Vec<i64> = f[4]
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some(date.0 * 86_400 + t[0] * 3600 + t[1] * 60 + t[2])
}

/// GET target: status and body as judged by `ok`, and the headers every 200
/// and 400 carries.
fn expect(client: &mut Client, target: &str, status: u16, ok: impl Fn(&[u8]) -> bool) -> Response {
    let r = client.request("GET", target);
    assert!(
        r.status == status && ok(&r.body),
        "GET {target} = {} {:.80}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(
        r.all("content-type"),
        [CONTENT_TYPE],
        "GET {target}: Content-Type"
    );
    assert_eq!(
        r.all("content-length"),
        [r.body.len().to_string()],
        "GET {target}: Content-Length"
    );
    for name in ["transfer-encoding", "content-encoding", "set-cookie"] {
        assert!(r.get(name).is_none(), "GET {target}: unexpected {name}");
    }
    let date = r.all("date");
    assert_eq!(date.len(), 1, "GET {target}: one Date");
    let at = imf_fixdate(date[0]).unwrap_or_else(|| panic!("GET {target}: Date {:?}", date[0]));
    assert!(
        (at * 1000 - now_millis()).abs() < 2000,
        "GET {target}: Date {:?} is not now",
        date[0]
    );
    r
}

fn is(want: &'static str) -> impl Fn(&[u8]) -> bool {
    move |body| body == want.as_bytes()
}

#[test]
fn http_n() {
    let inputs = json("inputs.json");
    let mut c = Client::connect();
    for case in cases(&inputs["n"]["valid"]) {
        let n = case["kb"].as_u64().unwrap() as usize;
        expect(&mut c, &format!("/?{}", field(case, "raw")), 200, |b| {
            b.len() == n * 1000 && b.iter().all(|&x| x == b'X')
        });
    }
    for case in cases(&inputs["n"]["hello"]) {
        expect(
            &mut c,
            &format!("/?{}", field(case, "raw")),
            200,
            is_fresh_hello,
        );
    }
    expect(&mut c, "/", 200, is_fresh_hello);
    for case in cases(&inputs["n"]["invalid"]) {
        // An error answer may close the connection; use a fresh one.
        let mut fresh = Client::connect();
        expect(
            &mut fresh,
            &format!("/?{}", field(case, "raw")),
            400,
            is(BAD_N),
        );
    }
}

#[test]
fn http_workday() {
    let inputs = json("inputs.json");
    let mut c = Client::connect();
    for case in cases(&inputs["at"]["valid"]) {
        let want = field(case, "expect").to_string();
        expect(
            &mut c,
            &format!("/workday?{}", field(case, "raw")),
            200,
            move |b| b == want.as_bytes(),
        );
    }
    for case in cases(&inputs["at"]["invalid"]) {
        let mut fresh = Client::connect();
        expect(
            &mut fresh,
            &format!("/workday?{}", field(case, "raw")),
            400,
            is(BAD_AT),
        );
    }
    let all = json("workday.json");
    for case in cases(&all["cases"]) {
        // Percent-encoded colons: decoded like any other query.
        let at = field(case, "at").replace(':', "%3A");
        let want = field(case, "expect").to_string();
        expect(&mut c, &format!("/workday?at={at}"), 200, move |b| {
            b == want.as_bytes()
        });
    }
    let today = |b: &[u8]| parse_at(&[b, b"T00:00".as_slice()].concat()).is_some();
    expect(&mut c, "/workday", 200, today);
    expect(&mut c, "/workday?n=5", 200, today);
}

#[test]
fn http_head() {
    let mut c = Client::connect();
    for target in [
        "/",
        "/?n=100",
        "/?n=0",
        "/workday",
        "/workday?at=2019-05-05T10:00",
        "/workday?at=",
    ] {
        let get = c.request("GET", target);
        let head = c.request("HEAD", target);
        assert_eq!(head.status, get.status, "HEAD {target}");
        assert_eq!(head.all("content-type"), [CONTENT_TYPE], "HEAD {target}");
        assert_eq!(
            head.get("content-length"),
            get.get("content-length"),
            "HEAD {target}"
        );
        // No body: the next response on the connection starts right away.
        let next = c.request("GET", "/?n=1");
        assert_eq!(
            (next.status, next.body.len()),
            (200, 1000),
            "after HEAD {target}"
        );
    }
}

#[test]
fn http_method_not_allowed() {
    for target in ["/", "/workday", "/?n=5", "/workday?at=2019-05-05T10:00"] {
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"] {
            let r = Client::connect().request(method, target);
            assert_eq!(
                (r.status, r.all("allow")),
                (405, vec![ALLOW]),
                "{method} {target}"
            );
        }
    }
}

#[test]
fn http_not_found() {
    for target in [
        "/workday/",
        "/index.html",
        "/foo",
        "/Workday",
        "/workday/x",
        "/favicon.ico",
        "//",
        "/%2F",
    ] {
        for method in ["GET", "HEAD", "POST"] {
            let r = Client::connect().request(method, target);
            assert_eq!(r.status, 404, "{method} {target}");
        }
    }
}

#[test]
fn http_connections() {
    // Keep-alive: many requests on one connection, still open after them.
    let mut c = Client::connect();
    for i in 0..50 {
        let target = ["/", "/?n=10", "/workday", "/workday?at=2019-05-05T10:00"][i % 4];
        assert_eq!(c.request("GET", target).status, 200, "{target}");
    }
    // Pipelined: three requests in one write, answered in order.
    c.send("GET /?n=1 HTTP/1.1\r\nHost: t\r\n\r\nGET /?n=2 HTTP/1.1\r\nHost: t\r\n\r\nGET /?n=3 HTTP/1.1\r\nHost: t\r\n\r\n");
    for n in 1..=3 {
        assert_eq!(c.response(false).body.len(), n * 1000);
    }
    // Connection: close is honoured: a complete answer, then the close.
    c.send("GET /?n=2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let r = c.response(false);
    assert_eq!((r.status, r.body.len()), (200, 2000));
    assert!(c.closed(), "connection still open after Connection: close");
    // HTTP/1.0, with and without Host: answered, with Content-Length.
    for host in ["Host: t\r\n", ""] {
        let mut c = Client::connect();
        c.send(&format!("GET / HTTP/1.0\r\n{host}\r\n"));
        let r = c.response(false);
        assert!(
            r.status == 200 && is_fresh_hello(&r.body),
            "HTTP/1.0 {host:?}: {r:?}"
        );
        assert_eq!(
            r.get("content-length"),
            Some(r.body.len().to_string().as_str())
        );
    }
}
