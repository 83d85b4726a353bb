//! A loopback HTTP/1.1 server for unit tests: every request recorded, canned answers by path (a queue per path, whose
//! last answer repeats), a request count per path, and misbehaviour on demand: a body trickled
//! a byte at a time, or a huge body streamed until the client hangs up.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Send the body one byte per this interval (after the headers, at once).
    pub trickle: Option<Duration>,
    /// Stream this many bytes of `x` as the body (Content-Length says so), instead of `body`.
    pub huge: Option<u64>,
}

impl Answer {
    pub fn json(body: impl Into<String>) -> Answer {
        Answer::with(200, body).header("Content-Type", "application/json")
    }

    pub fn with(status: u16, body: impl Into<String>) -> Answer {
        Answer {
            status,
            headers: vec![],
            body: body.into(),
            trickle: None,
            huge: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.into(), value.into()));
        self
    }
}

#[derive(Default)]
struct State {
    answers: HashMap<String, Vec<Answer>>,
    hits: HashMap<String, usize>,
    requests: Vec<Request>,
}

/// A request as it arrived: its method and target (path and query), its headers (names in lower
/// case) and its body.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// A request as the tests of one path read it.
pub type Received = Request;

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct TestServer {
    pub base: String,
    state: Arc<Mutex<State>>,
}

impl TestServer {
    /// Starts serving on 127.0.0.1 with a free port; the thread lives until the test ends.
    /// Each connection is served on a thread of its own, so a trickling answer blocks no other.
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        TestServer { base, state }
    }

    /// Answers `path` with `answer` from now on.
    pub fn answer(&self, path: &str, answer: Answer) {
        self.answer_in_turn(path, vec![answer]);
    }

    /// Answers `path` with these in turn; the last one repeats.
    pub fn answer_in_turn(&self, path: &str, answers: Vec<Answer>) {
        self.state
            .lock()
            .unwrap()
            .answers
            .insert(path.to_string(), answers);
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Every request for `path` so far, in order: its target, or its target's path.
    pub fn received(&self, path: &str) -> Vec<Received> {
        self.requests()
            .into_iter()
            .filter(|r| r.target == path || r.target.split('?').next() == Some(path))
            .collect()
    }

    /// The bodies of the requests to `path` so far, in order (a token POST's form).
    pub fn bodies(&self, path: &str) -> Vec<String> {
        self.received(path).into_iter().map(|r| r.body).collect()
    }

    pub fn hits(&self, path: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .hits
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

fn serve(mut stream: TcpStream, shared: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut content_length = 0usize;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        content_length = value.trim().parse().unwrap_or(0);
                    }
                    headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
                }
            }
        }
    }
    // Read the request body (a token POST's form) so that closing does not reset the connection.
    let mut body = vec![0; content_length];
    let _ = reader.read_exact(&mut body);
    let mut words = request_line.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let target = words.next().unwrap_or("").to_string();
    let answer = {
        let mut state = shared.lock().unwrap();
        state.requests.push(Request {
            method,
            target: target.clone(),
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        // Answers are set by path; a request with a query takes its path's unless the whole
        // target has answers of its own.
        let path = if state.answers.contains_key(&target) {
            target.clone()
        } else {
            target.split('?').next().unwrap_or("").to_string()
        };
        let turn = {
            let hits = state.hits.entry(path.clone()).or_default();
            *hits += 1;
            *hits - 1
        };
        state
            .answers
            .get(&path)
            .map(|answers| answers[turn.min(answers.len() - 1)].clone())
    };
    let answer = answer.unwrap_or(Answer::with(404, ""));
    let length = answer.huge.unwrap_or(answer.body.len() as u64);
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {length}\r\nConnection: close\r\n",
        answer.status
    );
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    if let Some(size) = answer.huge {
        let block = vec![b'x'; 64 * 1024];
        let mut sent = 0;
        while sent < size {
            let n = block.len().min((size - sent) as usize);
            if stream.write_all(&block[..n]).is_err() {
                return; // The client hung up: good.
            }
            sent += n as u64;
        }
    } else if let Some(pause) = answer.trickle {
        for byte in answer.body.as_bytes() {
            if stream.write_all(std::slice::from_ref(byte)).is_err() {
                return;
            }
            std::thread::sleep(pause);
        }
    } else {
        let _ = stream.write_all(answer.body.as_bytes());
    }
}
