//! Native `tracing` events to SLF4J through `io.fragstate.flink.jni.NativeLog`
//! (stderr when that class is missing).
//!
//! An event is formatted where it happens and put on a bounded queue; one
//! thread, attached to the JVM once, hands the queue to Java. So no runtime
//! thread ever calls into Java (a GC pause would stall the 2-thread runtime,
//! and pings time out), no JNI call is made while a lock is held, and a burst
//! of events drops the excess (counted, and reported in the next line that
//! gets through) instead of blocking the node.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};

use fragstate_core::error::Error;
use jni::objects::{GlobalRef, JClass, JValue};
use jni::{JNIEnv, JavaVM};
use once_cell::sync::OnceCell;

use crate::failure::{Failure, JResult};

// ---------------------------------------------------------------------------
// Logging: tracing events go to SLF4J through io.fragstate.flink.jni.NativeLog.

/// Events waiting for the Java thread, at most this many.
const LOG_QUEUE: usize = 4096;

/// One formatted event.
struct LogLine {
    level: i32,
    target: &'static str,
    message: String,
}

/// The sending side of the bounded log queue; never blocks.
struct LogQueue {
    tx: SyncSender<LogLine>,
    dropped: AtomicU64,
}

impl LogQueue {
    fn new(capacity: usize) -> (LogQueue, Receiver<LogLine>) {
        let (tx, rx) = sync_channel(capacity);
        (LogQueue { tx, dropped: AtomicU64::new(0) }, rx)
    }

    /// Queues `line`, or counts it as dropped when the queue is full (or
    /// the Java thread is gone).
    fn push(&self, line: LogLine) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(line) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped since the last call.
    fn take_dropped(&self) -> u64 {
        self.dropped.swap(0, Ordering::Relaxed)
    }
}

struct JavaLogLayer {
    queue: std::sync::Arc<LogQueue>,
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
        self.queue.push(LogLine { level, target: event.metadata().target(), message: msg.0 });
    }
}

/// The one Java-attached thread: hands queued lines to `NativeLog.log`.
fn forward_to_java(vm: JavaVM, class: GlobalRef, queue: std::sync::Arc<LogQueue>, lines: Receiver<LogLine>) {
    let mut env = match vm.attach_current_thread_as_daemon() {
        Ok(env) => env,
        Err(e) => {
            eprintln!("fragstate: native logs go to stderr (attaching the log thread failed: {e})");
            for l in lines {
                eprintln!("fragstate [{}] {}", l.target, l.message);
            }
            return;
        }
    };
    for mut l in lines {
        let dropped = queue.take_dropped();
        if dropped > 0 {
            l.message = format!("{} ({dropped} native log events dropped before this one: the log queue of {LOG_QUEUE} was full)", l.message);
        }
        let sent = (|| -> jni::errors::Result<()> {
            let t = env.new_string(l.target)?;
            let m = env.new_string(&l.message)?;
            let class = <&JClass>::from(class.as_obj());
            let r = env.call_static_method(class, "log", "(ILjava/lang/String;Ljava/lang/String;)V", &[JValue::Int(l.level), JValue::Object(&t), JValue::Object(&m)]);
            if env.exception_check()? {
                env.exception_clear()?;
            }
            env.delete_local_ref(t)?;
            env.delete_local_ref(m)?;
            r.map(|_| ())
        })();
        if sent.is_err() {
            eprintln!("fragstate [{}] {}", l.target, l.message);
        }
    }
}

static LOGGING: OnceCell<()> = OnceCell::new();

pub(crate) fn init_logging(env: &mut JNIEnv, level: &str) -> JResult<()> {
    use tracing_subscriber::layer::SubscriberExt;
    let filter: tracing_subscriber::filter::Targets = level
        .parse()
        .map_err(|e| Failure::Core(Error::invalid("log level", level, format!("error, warn, info, debug, trace or target=level directives ({e})"))))?;
    LOGGING.get_or_try_init(|| -> JResult<()> {
        let vm = env.get_java_vm()?;
        let layer = match env.find_class("io/fragstate/flink/jni/NativeLog") {
            Ok(class) => {
                let class = env.new_global_ref(class)?;
                let (queue, lines) = LogQueue::new(LOG_QUEUE);
                let queue = std::sync::Arc::new(queue);
                let forwarder = queue.clone();
                std::thread::Builder::new()
                    .name("fragstate-log".into())
                    .spawn(move || forward_to_java(vm, class, forwarder, lines))
                    .map_err(|e| Failure::Core(Error::io("start the native log thread", e)))?;
                Some(JavaLogLayer { queue })
            }
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


#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: usize) -> LogLine {
        LogLine { level: 2, target: "t", message: format!("event {i}") }
    }

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_blocking() {
        let (queue, lines) = LogQueue::new(4);
        for i in 0..10 {
            queue.push(line(i)); // would block forever without a reader if it could block
        }
        assert_eq!(queue.take_dropped(), 6);
        assert_eq!(queue.take_dropped(), 0, "counted once");
        let got: Vec<String> = lines.try_iter().map(|l| l.message).collect();
        assert_eq!(got, ["event 0", "event 1", "event 2", "event 3"], "the first ones, in order");
        drop(lines);
        queue.push(line(11));
        assert_eq!(queue.take_dropped(), 1, "no reader: dropped, not blocked");
    }
}
