//! Java arguments checked and converted: strings, direct buffers, array ranges.

use jni::objects::{JByteArray, JByteBuffer, JString};
use jni::sys::jint;
use jni::JNIEnv;

use crate::failure::{Failure, JResult};

pub(crate) fn string(env: &mut JNIEnv, s: &JString, what: &'static str) -> JResult<String> {
    if s.is_null() {
        return Err(Failure::Null(what));
    }
    Ok(env.get_string(s)?.into())
}

/// The first `len` bytes of a direct buffer, checked against its capacity.
///
/// # Safety
/// The caller keeps `buf` (a live local reference) for as long as the slice is used.
pub(crate) unsafe fn direct_bytes<'a>(env: &JNIEnv, buf: &JByteBuffer, len: jint) -> JResult<&'a mut [u8]> {
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

/// Java's `byte` is signed: the same bytes seen as `jbyte`s, without a copy.
pub(crate) fn as_jbytes(b: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment, and every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast(), b.len()) }
}

/// [`as_jbytes`] for a buffer Java fills.
pub(crate) fn as_jbytes_mut(b: &mut [u8]) -> &mut [i8] {
    // SAFETY: as in `as_jbytes`; the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast(), b.len()) }
}

pub(crate) fn check_range(env: &JNIEnv, arr: &JByteArray, off: jint, len: jint) -> JResult<()> {
    if arr.is_null() {
        return Err(Failure::Null("byte array"));
    }
    let n = env.get_array_length(arr)?;
    if off < 0 || len < 0 || off as i64 + len as i64 > n as i64 {
        return Err(Failure::Arg(format!("offset {off} and length {len} outside the array of {n} bytes")));
    }
    Ok(())
}

