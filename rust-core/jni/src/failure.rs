//! Why a native call failed and how that reaches Java: every error and every
//! panic becomes a Java exception of one class per kind; nothing here may
//! abort the JVM.

use std::panic::{catch_unwind, AssertUnwindSafe};

use fragstate_core::error::Error;
use jni::objects::JValue;
use jni::sys::jlong;
use jni::JNIEnv;

/// Why a native call failed; each maps to one Java exception class.
pub(crate) enum Failure {
    Core(Error),
    Closed(jlong),
    Null(&'static str),
    Arg(String),
    NoNode,
    Jni(jni::errors::Error),
    Panic(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::Jni(e)
    }
}

pub(crate) type JResult<T> = std::result::Result<T, Failure>;

/// Throws `io.fragstate.flink.jni.PlacementException` with the counts as
/// fields, so that Java decides on the type, never on the message text.
fn throw_placement(env: &mut JNIEnv, e: &Error) -> jni::errors::Result<()> {
    let Error::InsufficientNodes { needed, k, m, usable, domains, .. } = e else {
        unreachable!("throw_placement takes InsufficientNodes only")
    };
    let msg = env.new_string(e.to_string())?;
    let int = |v: usize| JValue::Int(v.min(i32::MAX as usize) as i32);
    let ex = env.new_object(
        "io/fragstate/flink/jni/PlacementException",
        "(Ljava/lang/String;IIIII)V",
        &[JValue::Object(&msg), int(*needed), int(*k), int(*m), int(*usable), int(*domains)],
    )?;
    env.throw(jni::objects::JThrowable::from(ex))
}

fn throw(env: &mut JNIEnv, failure: Failure) {
    if env.exception_check().unwrap_or(false) {
        return; // a Java exception from a JNI call is already pending: keep it
    }
    if let Failure::Core(e @ Error::InsufficientNodes { .. }) = &failure {
        if throw_placement(env, e).is_ok() {
            return;
        }
        // The class is missing (an old jar?) or construction failed: fall back to an IOException.
        let _ = env.exception_clear();
    }
    let (class, msg) = match failure {
        Failure::Core(e @ Error::NotFound { .. }) => ("java/io/FileNotFoundException", e.to_string()),
        Failure::Core(e @ Error::AlreadyExists { .. }) => ("java/nio/file/FileAlreadyExistsException", e.to_string()),
        Failure::Core(e @ Error::InvalidParameter { .. }) => ("java/lang/IllegalArgumentException", e.to_string()),
        Failure::Core(e @ Error::InvalidSeek { .. }) => ("java/io/EOFException", e.to_string()),
        Failure::Core(e) => ("java/io/IOException", e.to_string()),
        Failure::Closed(h) => ("java/io/IOException", format!("fragstate: handle {h} is closed or unknown")),
        Failure::Null(what) => ("java/lang/NullPointerException", format!("fragstate: {what} must not be null")),
        Failure::Arg(msg) => ("java/lang/IllegalArgumentException", format!("fragstate: {msg}")),
        Failure::NoNode => ("java/io/IOException", "fragstate: the node is not running (startNode was not called or stopNode was)".into()),
        Failure::Jni(e) => ("java/io/IOException", format!("fragstate: JNI error: {e}")),
        Failure::Panic(msg) => ("java/io/IOException", format!("fragstate: internal error (native panic): {msg}")),
    };
    if env.throw_new(class, &msg).is_err() {
        // Throwing failed (out of memory?): there is nothing better to do than log.
        eprintln!("fragstate: could not throw {class}: {msg}");
    }
}

/// Runs a native call body: errors and panics become Java exceptions and
/// the call returns `default`.
pub(crate) fn guard<'l, T>(env: &mut JNIEnv<'l>, default: T, body: impl FnOnce(&mut JNIEnv<'l>) -> JResult<T>) -> T {
    match catch_unwind(AssertUnwindSafe(|| body(env))) {
        Ok(Ok(v)) => v,
        Ok(Err(f)) => {
            throw(env, f);
            default
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            throw(env, Failure::Panic(msg));
            default
        }
    }
}

