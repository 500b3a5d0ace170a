//! JNI exports of `io.fragstate.flink.jni.FragstateNative` (the contract is
//! documented on that Java class). A thin adapter: one [`Node`] and one tokio
//! runtime per process, writers and readers behind opaque handles, every
//! error and every panic turned into a Java exception — nothing here may
//! abort the JVM. Blocking calls run `block_on` on the calling Java thread,
//! never on a runtime worker.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use jni::objects::{GlobalRef, JByteArray, JByteBuffer, JClass, JObject, JString, JValue};
use jni::sys::{jboolean, jint, jlong, jlongArray, jobjectArray, jstring, JNI_FALSE, JNI_TRUE};
use jni::{JNIEnv, JavaVM};
use once_cell::sync::{Lazy, OnceCell};
use tokio::runtime::Runtime;

use crate::client::PathKind;
use crate::error::Error;
use crate::node::{Node, NodeConfig};
use crate::reader::ObjectReader;
use crate::writer::ObjectWriter;

/// Why a native call failed; each maps to one Java exception class.
enum Failure {
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

type JResult<T> = std::result::Result<T, Failure>;

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
fn guard<'l, T>(env: &mut JNIEnv<'l>, default: T, body: impl FnOnce(&mut JNIEnv<'l>) -> JResult<T>) -> T {
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

static RUNTIME: OnceCell<Runtime> = OnceCell::new();
static NODE: Mutex<Option<Arc<Node>>> = Mutex::new(None);
static WRITERS: Lazy<Handles<ObjectWriter>> = Lazy::new(Handles::default);
static READERS: Lazy<Handles<ObjectReader>> = Lazy::new(Handles::default);

fn runtime() -> JResult<&'static Runtime> {
    RUNTIME.get_or_try_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fragstate-rt")
            .enable_all()
            .build()
            .map_err(|e| Failure::Core(Error::io("start the fragstate runtime", e)))
    })
}

fn node() -> JResult<Arc<Node>> {
    lock(&NODE).clone().ok_or(Failure::NoNode)
}

/// Open writers or readers by handle. A slot is `None` once closed, so a
/// call racing with `close` finds it closed instead of touching freed state.
struct Handles<T> {
    next: AtomicI64,
    map: Mutex<HashMap<jlong, Arc<Mutex<Option<T>>>>>,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Handles { next: AtomicI64::new(1), map: Mutex::new(HashMap::new()) }
    }
}

impl<T> Handles<T> {
    fn insert(&self, v: T) -> jlong {
        let h = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.map).insert(h, Arc::new(Mutex::new(Some(v))));
        h
    }

    fn with<R>(&self, h: jlong, f: impl FnOnce(&mut T) -> JResult<R>) -> JResult<R> {
        let slot = lock(&self.map).get(&h).cloned().ok_or(Failure::Closed(h))?;
        let mut guard = lock(&slot);
        f(guard.as_mut().ok_or(Failure::Closed(h))?)
    }

    /// Removes the handle; waits for a call in progress on it to finish.
    fn take(&self, h: jlong) -> JResult<T> {
        let slot = lock(&self.map).remove(&h).ok_or(Failure::Closed(h))?;
        let taken = lock(&slot).take();
        taken.ok_or(Failure::Closed(h))
    }

    fn clear(&self) -> Vec<T> {
        let slots: Vec<_> = lock(&self.map).drain().map(|(_, s)| s).collect();
        slots.into_iter().filter_map(|s| lock(&s).take()).collect()
    }
}

fn string(env: &mut JNIEnv, s: &JString, what: &'static str) -> JResult<String> {
    if s.is_null() {
        return Err(Failure::Null(what));
    }
    Ok(env.get_string(s)?.into())
}

/// The first `len` bytes of a direct buffer, checked against its capacity.
///
/// # Safety
/// The caller keeps `buf` (a live local reference) for as long as the slice is used.
unsafe fn direct_bytes<'a>(env: &JNIEnv, buf: &JByteBuffer, len: jint) -> JResult<&'a mut [u8]> {
    if buf.is_null() {
        return Err(Failure::Null("buffer"));
    }
    let addr = env
        .get_direct_buffer_address(buf)
        .map_err(|_| Failure::Arg("the ByteBuffer must be a direct buffer".into()))?;
    let cap = env.get_direct_buffer_capacity(buf)?;
    if len < 0 || len as usize > cap {
        return Err(Failure::Arg(format!("length {len} outside 0 ≤ length ≤ {cap} (the buffer's capacity)")));
    }
    if len == 0 {
        return Ok(&mut []);
    }
    Ok(std::slice::from_raw_parts_mut(addr, len as usize))
}

fn check_range(env: &JNIEnv, arr: &JByteArray, off: jint, len: jint) -> JResult<()> {
    if arr.is_null() {
        return Err(Failure::Null("byte array"));
    }
    let n = env.get_array_length(arr)?;
    if off < 0 || len < 0 || off as i64 + len as i64 > n as i64 {
        return Err(Failure::Arg(format!("offset {off} and length {len} outside the array of {n} bytes")));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Logging: tracing events go to SLF4J through io.fragstate.flink.jni.NativeLog.

struct JavaLogLayer {
    vm: JavaVM,
    class: GlobalRef,
}

struct MessageVisitor(String);

impl tracing::field::Visit for MessageVisitor {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for JavaLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => 4,
            tracing::Level::WARN => 3,
            tracing::Level::INFO => 2,
            tracing::Level::DEBUG => 1,
            tracing::Level::TRACE => 0,
        };
        let mut msg = MessageVisitor(String::new());
        event.record(&mut msg);
        let target = event.metadata().target();
        let sent = (|| -> jni::errors::Result<()> {
            let mut env = self.vm.attach_current_thread_as_daemon()?;
            let t = env.new_string(target)?;
            let m = env.new_string(&msg.0)?;
            let class = <&JClass>::from(self.class.as_obj());
            let r = env.call_static_method(class, "log", "(ILjava/lang/String;Ljava/lang/String;)V", &[JValue::Int(level), JValue::Object(&t), JValue::Object(&m)]);
            if env.exception_check()? {
                env.exception_clear()?;
            }
            env.delete_local_ref(t)?;
            env.delete_local_ref(m)?;
            r.map(|_| ())
        })();
        if sent.is_err() {
            eprintln!("fragstate [{target}] {}", msg.0);
        }
    }
}

static LOGGING: OnceCell<()> = OnceCell::new();

fn init_logging(env: &mut JNIEnv, level: &str) -> JResult<()> {
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| Failure::Core(Error::invalid("log level", level, format!("error, warn, info, debug, trace or a tracing filter ({e})"))))?;
    LOGGING.get_or_try_init(|| -> JResult<()> {
        let vm = env.get_java_vm()?;
        let layer = match env.find_class("io/fragstate/flink/jni/NativeLog") {
            Ok(class) => Some(JavaLogLayer { vm, class: env.new_global_ref(class)? }),
            Err(_) => {
                env.exception_clear()?;
                None
            }
        };
        let registry = tracing_subscriber::registry().with(filter);
        let result = match layer {
            Some(l) => tracing::subscriber::set_global_default(registry.with(l)),
            None => tracing::subscriber::set_global_default(registry.with(tracing_subscriber::fmt::layer().with_ansi(false).with_writer(std::io::stderr))),
        };
        if result.is_err() {
            eprintln!("fragstate: a tracing subscriber was already installed; native logs go there");
        }
        Ok(())
    })?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Exports. Names follow the JNI convention for io.fragstate.flink.jni.FragstateNative.

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_startNode<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, config: JString<'l>) {
    guard(&mut env, (), |env| {
        let json = string(env, &config, "config")?;
        let config = NodeConfig::from_json(&json)?;
        init_logging(env, &config.log_level)?;
        let mut slot = lock(&NODE);
        if let Some(running) = slot.as_ref() {
            if running.config() == &config {
                return Ok(());
            }
            return Err(Failure::Core(Error::InvalidState {
                path: "fragstate node".into(),
                reason: format!("already running with another configuration ({:?}); stop it first", running.config()),
            }));
        }
        let rt = runtime()?;
        let _enter = rt.enter();
        *slot = Some(Arc::new(Node::start(config)?));
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_limits<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| Ok(env.new_string(crate::node::limits_json())?.into_raw()))
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_stopNode<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>) {
    guard(&mut env, (), |_| {
        let old = lock(&NODE).take();
        if old.is_some() {
            let rt = runtime()?;
            let _enter = rt.enter();
            // Unfinished writes are aborted (their Drop deletes the fragments sent).
            drop(WRITERS.clear());
            drop(READERS.clear());
            tracing::info!("fragstate node stopped");
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_nodeRunning<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>) -> jboolean {
    guard(&mut env, JNI_FALSE, |_| Ok(if lock(&NODE).is_some() { JNI_TRUE } else { JNI_FALSE }))
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_nodeStats<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let json = node()?.stats_json();
        Ok(env.new_string(json)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_awaitPlacement<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, timeout_ms: jlong) {
    guard(&mut env, (), |_| {
        if timeout_ms < 0 {
            return Err(Failure::Core(Error::invalid("placement wait timeout (ms)", timeout_ms, "0 or more")));
        }
        let node = node()?;
        runtime()?.block_on(node.await_placement(std::time::Duration::from_millis(timeout_ms as u64)))?;
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_createWriter<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    path: JString<'l>,
    overwrite: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let path = string(env, &path, "path")?;
        let node = node()?;
        let w = runtime()?.block_on(node.client().create(&path, overwrite == JNI_TRUE))?;
        Ok(WRITERS.insert(w))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_write<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    writer: jlong,
    buf: JByteBuffer<'l>,
    len: jint,
) {
    guard(&mut env, (), |env| {
        // SAFETY: `buf` is a live local reference for the whole call.
        let bytes = unsafe { direct_bytes(env, &buf, len)? };
        let rt = runtime()?;
        WRITERS.with(writer, |w| Ok(rt.block_on(w.write(bytes))?))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_writeArray<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    writer: jlong,
    arr: JByteArray<'l>,
    off: jint,
    len: jint,
) {
    guard(&mut env, (), |env| {
        check_range(env, &arr, off, len)?;
        let mut bytes = vec![0i8; len as usize];
        env.get_byte_array_region(&arr, off, &mut bytes)?;
        // i8 → u8 reinterpretation of the same bytes.
        let bytes: Vec<u8> = bytes.into_iter().map(|b| b as u8).collect();
        let rt = runtime()?;
        WRITERS.with(writer, |w| Ok(rt.block_on(w.write(&bytes))?))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_closeWriter<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, writer: jlong) {
    guard(&mut env, (), |_| {
        let w = WRITERS.take(writer)?;
        runtime()?.block_on(w.close())?;
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_abortWriter<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, writer: jlong) {
    guard(&mut env, (), |_| {
        let w = WRITERS.take(writer)?;
        runtime()?.block_on(w.abort());
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_openReader<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, path: JString<'l>) -> jlong {
    guard(&mut env, 0, |env| {
        let path = string(env, &path, "path")?;
        let node = node()?;
        let r = runtime()?.block_on(node.client().open(&path))?;
        Ok(READERS.insert(r))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_readerLength<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, reader: jlong) -> jlong {
    guard(&mut env, 0, |_| READERS.with(reader, |r| Ok(r.len() as jlong)))
}

fn read_into(reader: jlong, out: &mut [u8]) -> JResult<jint> {
    let rt = runtime()?;
    READERS.with(reader, |r| {
        if out.is_empty() {
            return Ok(0);
        }
        // Fill as much of the buffer as the object has: fewer JNI round trips.
        let mut filled = 0;
        while filled < out.len() {
            let n = rt.block_on(r.read(&mut out[filled..]))?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        Ok(if filled == 0 { -1 } else { filled as jint })
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_read<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    reader: jlong,
    buf: JByteBuffer<'l>,
    len: jint,
) -> jint {
    guard(&mut env, -1, |env| {
        // SAFETY: `buf` is a live local reference for the whole call.
        let out = unsafe { direct_bytes(env, &buf, len)? };
        read_into(reader, out)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_readArray<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    reader: jlong,
    arr: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    guard(&mut env, -1, |env| {
        check_range(env, &arr, off, len)?;
        let mut out = vec![0u8; len as usize];
        let n = read_into(reader, &mut out)?;
        if n > 0 {
            let signed: Vec<i8> = out[..n as usize].iter().map(|&b| b as i8).collect();
            env.set_byte_array_region(&arr, off, &signed)?;
        }
        Ok(n)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_seek<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, reader: jlong, pos: jlong) {
    guard(&mut env, (), |_| {
        if pos < 0 {
            return Err(Failure::Arg(format!("seek position {pos} is negative")));
        }
        READERS.with(reader, |r| Ok(r.seek(pos as u64)?))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_position<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, reader: jlong) -> jlong {
    guard(&mut env, 0, |_| READERS.with(reader, |r| Ok(r.position() as jlong)))
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_closeReader<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, reader: jlong) {
    guard(&mut env, (), |_| {
        let r = READERS.take(reader)?;
        let _enter = runtime()?.enter();
        drop(r);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_stat<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, path: JString<'l>) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let path = string(env, &path, "path")?;
        let node = node()?;
        let kind = runtime()?.block_on(node.client().path_kind(&path))?;
        let v: [i64; 3] = match kind {
            PathKind::Missing => [0, 0, 0],
            PathKind::Object(s) => [1, s.length as i64, s.created_unix_ms as i64],
            PathKind::Directory => [2, 0, 0],
        };
        let arr = env.new_long_array(3)?;
        env.set_long_array_region(&arr, 0, &v)?;
        Ok(arr.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_listStatus<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, dir: JString<'l>) -> jobjectArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let dir = string(env, &dir, "dir")?;
        let node = node()?;
        let kids = runtime()?.block_on(node.client().list_children(&dir))?;
        let n = kids.len() as i32;
        let names = env.new_object_array(n, "java/lang/String", JObject::null())?;
        for (i, k) in kids.iter().enumerate() {
            let s = env.new_string(&k.path)?;
            env.set_object_array_element(&names, i as i32, &s)?;
            env.delete_local_ref(s)?;
        }
        let lengths = env.new_long_array(n)?;
        env.set_long_array_region(&lengths, 0, &kids.iter().map(|k| k.length as i64).collect::<Vec<_>>())?;
        let times = env.new_long_array(n)?;
        env.set_long_array_region(&times, 0, &kids.iter().map(|k| k.modified_unix_ms as i64).collect::<Vec<_>>())?;
        let dirs = env.new_boolean_array(n)?;
        env.set_boolean_array_region(&dirs, 0, &kids.iter().map(|k| k.is_dir as u8).collect::<Vec<_>>())?;
        let out = env.new_object_array(4, "java/lang/Object", JObject::null())?;
        env.set_object_array_element(&out, 0, &names)?;
        env.set_object_array_element(&out, 1, &lengths)?;
        env.set_object_array_element(&out, 2, &times)?;
        env.set_object_array_element(&out, 3, &dirs)?;
        Ok(out.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_delete<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    path: JString<'l>,
    recursive: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let path = string(env, &path, "path")?;
        let node = node()?;
        let report = runtime()?.block_on(node.client().delete(&path, recursive == JNI_TRUE))?;
        Ok(report.objects as jlong)
    })
}
