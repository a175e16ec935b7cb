//! Reports each assertion of the tests on the evaluator's report pipe.
//!
//! The runner gives the program a pipe (EVALUATOR_REPORT_FD) and a per-run nonce
//! (EVALUATOR_NONCE); every record is one line, "<nonce> <json>". Both variables are
//! read and removed before any test runs. The assertion macros that call into this
//! crate (`runtime/rust/macros.rs`) are defined just before the test code, so the code
//! under test keeps the standard `assert!` and panics as usual. The crate is compiled
//! once per toolchain and linked into every sample.
use std::cell::RefCell;
use std::fmt::Debug;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::io::FromRawFd;
use std::sync::Mutex;

const VALUE_CAP: usize = 300;
const NONCE_FD: i32 = 4;

struct Reporter {
    out: Option<File>,
    nonce: String,
    count: usize,
}

static REPORTER: Mutex<Option<Reporter>> = Mutex::new(None);

thread_local! {
    static LAST_PANIC: RefCell<Option<(String, u32)>> = RefCell::new(None);
}

/// Debug-formats a value when its type is Debug, and says so when it is not
/// (autoref specialisation: `(&&Show(x)).shown()` picks `ViaDebug` when it applies).
/// The generic part is a coercion to `&dyn Debug`; the formatting is compiled here,
/// once, not in every sample.
pub struct Show<'a, T: ?Sized>(pub &'a T);

pub trait ViaDebug {
    fn shown(&self) -> String;
}

impl<'a, T: Debug> ViaDebug for &Show<'a, T> {
    #[inline]
    fn shown(&self) -> String {
        debug_text(self.0)
    }
}

pub trait ViaNone {
    fn shown(&self) -> String;
}

impl<'a, T: ?Sized> ViaNone for Show<'a, T> {
    #[inline]
    fn shown(&self) -> String {
        String::from("<value without Debug>")
    }
}

#[inline(never)]
pub fn debug_text(value: &dyn Debug) -> String {
    cap(format!("{:?}", value))
}

fn cap(text: String) -> String {
    if text.len() <= VALUE_CAP {
        return text;
    }
    let mut cut = VALUE_CAP;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more]", &text[..cut], text.len() - cut)
}

fn quote(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub enum Value<'a> {
    Str(&'a str),
    Int(u64),
}

fn emit(fields: &[(&str, Value)]) {
    let mut guard = match REPORTER.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    let reporter = match guard.as_mut() {
        Some(reporter) => reporter,
        None => return,
    };
    let mut line = String::new();
    line.push_str(&reporter.nonce);
    line.push_str(" {");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        quote(&mut line, key);
        line.push(':');
        match value {
            Value::Str(text) => quote(&mut line, text),
            Value::Int(number) => line.push_str(&number.to_string()),
        }
    }
    line.push_str("}\n");
    if let Some(out) = reporter.out.as_mut() {
        // One write per record, so records never interleave.
        let _ = out.write_all(line.as_bytes());
    }
}

fn next_index() -> u64 {
    let mut guard = match REPORTER.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    match guard.as_mut() {
        Some(reporter) => {
            reporter.count += 1;
            (reporter.count - 1) as u64
        }
        None => 0,
    }
}

fn take_panic() -> (String, u32) {
    LAST_PANIC
        .with(|last| last.borrow_mut().take())
        .unwrap_or_else(|| (String::from("panic"), 0))
}

/// The outcome of one assertion: (passed, expected, actual, message if failed).
pub type Checked = (bool, String, String, Option<String>);

/// Runs one assertion's check inside `catch_unwind` and reports it. The check comes as a
/// boxed trait object, so `catch_unwind` is instantiated once, here, not in every sample
/// for every assertion.
#[inline(never)]
pub fn check<'a>(line: u32, label: &str, body: Box<dyn FnOnce() -> Checked + 'a>) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    let index = next_index();
    let line = line as u64;
    match result {
        Ok((true, expected, actual, _)) => {
            let expected = format!("{}{}", label, expected);
            emit(&[
                ("kind", Value::Str("test")), ("index", Value::Int(index)),
                ("status", Value::Str("passed")), ("line", Value::Int(line)),
                ("expected", Value::Str(&expected)), ("actual", Value::Str(&actual)),
            ])
        }
        Ok((false, expected, actual, message)) => {
            let expected = format!("{}{}", label, expected);
            let message = message.unwrap_or_default();
            emit(&[
                ("kind", Value::Str("test")), ("index", Value::Int(index)),
                ("status", Value::Str("failed")), ("line", Value::Int(line)),
                ("expected", Value::Str(&expected)), ("actual", Value::Str(&actual)),
                ("error_type", Value::Str("AssertionError")),
                ("message", Value::Str(&cap(message))),
            ])
        }
        Err(_) => {
            let (message, _) = take_panic();
            emit(&[
                ("kind", Value::Str("test")), ("index", Value::Int(index)),
                ("status", Value::Str("error")), ("line", Value::Int(line)),
                ("error_type", Value::Str("panic")), ("message", Value::Str(&cap(message))),
            ])
        }
    }
}

fn init() {
    let fd = std::env::var("EVALUATOR_REPORT_FD").ok().and_then(|v| v.parse::<i32>().ok());
    let mut nonce = std::env::var("EVALUATOR_NONCE").unwrap_or_default();
    std::env::remove_var("EVALUATOR_REPORT_FD");
    std::env::remove_var("EVALUATOR_NONCE");
    // The launcher script hands the nonce over on fd 4, so that it is not in the
    // environment the program could read (/proc/self/environ).
    // Safety: fd 4 is either the launcher's here-document or not open; a File over a
    // descriptor that is not open is forgotten, never closed.
    // Only under the runner: it closes every descriptor above 3, so fd 4 can only be
    // the launcher's; elsewhere fd 4 may be anything, even a pipe that never ends.
    if fd.is_some() {
        let mut handoff = unsafe { File::from_raw_fd(NONCE_FD) };
        let mut text = String::new();
        if handoff.read_to_string(&mut text).is_ok() && !text.trim().is_empty() {
            nonce = text.trim().to_string();
            drop(handoff);
        } else {
            std::mem::forget(handoff);
        }
    }
    // Safety: the runner opened this descriptor for us and nothing else uses it.
    let out = fd.filter(|fd| *fd > 2).map(|fd| unsafe { File::from_raw_fd(fd) });
    let mut guard = match REPORTER.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    *guard = Some(Reporter { out, nonce, count: 0 });
    // Panics are reported as records; the default hook would only repeat them.
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            text.to_string()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            String::from("panic with a non-string payload")
        };
        let line = info.location().map(|l| l.line()).unwrap_or(0);
        let located = match info.location() {
            Some(l) => format!("{} (line {})", message, l.line()),
            None => message,
        };
        LAST_PANIC.with(|last| *last.borrow_mut() = Some((located, line)));
    }));
}

/// Runs each test function; a panic outside any assertion ends that function only.
pub fn run(tests: &[(&str, fn())]) {
    init();
    for (name, test) in tests {
        if std::panic::catch_unwind(*test).is_err() {
            let (message, line) = take_panic();
            emit(&[
                ("kind", Value::Str("exception")), ("where", Value::Str(name)),
                ("error_type", Value::Str("panic")), ("message", Value::Str(&cap(message))),
                ("line", Value::Int(line as u64)),
            ]);
        }
    }
    let count = {
        let guard = match REPORTER.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        guard.as_ref().map(|r| r.count).unwrap_or(0)
    };
    emit(&[("kind", Value::Str("done")), ("tests", Value::Int(count as u64))]);
}
