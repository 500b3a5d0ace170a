//! `fragstate get PATH DST`: reads an object into a local file (or stdout).

use std::io::Write;
use std::path::PathBuf;

use fragstate_core::{Error, Result};

use crate::args::ClusterArgs;
use crate::cluster::{Progress, client, connect, runtime};

pub(crate) fn get(args: ClusterArgs, path: String, dst: PathBuf) -> Result<()> {
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(1)).await?;
        let r = async {
            let c = client(&node, &args, None)?;
            let mut r = c.open(&path).await?;
            let total = r.len();
            let mut out: Box<dyn Write + Send> = if dst.as_os_str() == "-" {
                Box::new(std::io::stdout())
            } else {
                Box::new(std::fs::File::create(&dst).map_err(|e| Error::io(format!("create {}", dst.display()), e))?)
            };
            let mut progress = Progress::new("get", Some(total));
            let mut buf = vec![0u8; 4 << 20];
            loop {
                let n = r.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                tokio::task::block_in_place(|| out.write_all(&buf[..n])).map_err(|e| Error::io(format!("write {}", dst.display()), e))?;
                progress.update(r.position());
            }
            out.flush().map_err(|e| Error::io(format!("write {}", dst.display()), e))?;
            let st = r.stats();
            eprintln!("get {path}: {}; {st:?}", progress.done(total));
            // Corrupt cells met on the way are reported to their holders before the process ends.
            c.settle_reports(std::time::Duration::from_secs(5)).await;
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}
