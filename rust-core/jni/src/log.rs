//! Native `tracing` events to SLF4J through `io.fragstate.flink.jni.NativeLog`
//! (stderr when that class is missing).

use fragstate_core::error::Error;
use jni::objects::{GlobalRef, JClass, JValue};
use jni::{JNIEnv, JavaVM};
use once_cell::sync::OnceCell;

use crate::failure::{Failure, JResult};

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

pub(crate) fn init_logging(env: &mut JNIEnv, level: &str) -> JResult<()> {
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

