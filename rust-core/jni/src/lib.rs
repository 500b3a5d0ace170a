//! JNI exports of `io.fragstate.flink.jni.FragstateNative` (the contract is
//! documented on that Java class). A thin adapter: one [`Node`] and one tokio
//! runtime per process, writers and readers behind opaque handles, every
//! error and every panic turned into a Java exception — nothing here may
//! abort the JVM. Blocking calls run `block_on` on the calling Java thread,
//! never on a runtime worker.

mod args;
mod failure;
mod handles;
mod log;

use std::sync::{Arc, Mutex};

use fragstate_client::client::PathKind;
use fragstate_client::reader::ObjectReader;
use fragstate_client::writer::ObjectWriter;
use fragstate_core::error::Error;
use fragstate_node::{Node, NodeConfig};

/// Counts the live heap bytes of fragstate's native code in the JVM (`fragstate_core::heap`;
/// the gauge `fragstate.heapBytes`, the soak's samples).
#[global_allocator]
static ALLOCATOR: fragstate_core::heap::CountingAllocator = fragstate_core::heap::CountingAllocator;
use jni::objects::{JByteArray, JByteBuffer, JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, jlongArray, jobjectArray, jstring, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;
use once_cell::sync::{Lazy, OnceCell};
use tokio::runtime::Runtime;

use crate::args::{as_jbytes, as_jbytes_mut, check_range, direct_bytes, string};
use crate::failure::{guard, Failure, JResult};
use crate::handles::{lock, Handles};
use crate::log::init_logging;

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
            return Err(Failure::Core(Error::Usage {
                component: "fragstate node",
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
    guard(&mut env, std::ptr::null_mut(), |env| Ok(env.new_string(fragstate_node::limits_json())?.into_raw()))
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
        let mut bytes = vec![0u8; len as usize];
        env.get_byte_array_region(&arr, off, as_jbytes_mut(&mut bytes))?;
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
            env.set_byte_array_region(&arr, off, as_jbytes(&out[..n as usize]))?;
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
        long_array(env, kind)
    })
}

/// `{kind, length, modificationTimeMillis}` of a stat (FragstateNative.stat's javadoc).
fn long_array(env: &mut JNIEnv, kind: PathKind) -> JResult<jlongArray> {
    let v: [i64; 3] = match kind {
        PathKind::Missing => [0, 0, 0],
        PathKind::Object(s) => [1, s.length as i64, s.created_unix_ms as i64],
        PathKind::Directory => [2, 0, 0],
    };
    let arr = env.new_long_array(3)?;
    env.set_long_array_region(&arr, 0, &v)?;
    Ok(arr.into_raw())
}

#[no_mangle]
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_statFile<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, path: JString<'l>) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let path = string(env, &path, "path")?;
        let node = node()?;
        let found = runtime()?.block_on(node.client().stat_as_create(&path))?;
        long_array(env, found.map_or(PathKind::Missing, PathKind::Object))
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
pub extern "system" fn Java_io_fragstate_flink_jni_FragstateNative_mkdirs<'l>(mut env: JNIEnv<'l>, _c: JClass<'l>, dir: JString<'l>) {
    guard(&mut env, (), |env| {
        let dir = string(env, &dir, "dir")?;
        let node = node()?;
        runtime()?.block_on(node.client().mkdirs(&dir))?;
        Ok(())
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

