//! `fragstate put SRC PATH`: stores a local file (or stdin) as an object.

use std::io::Read;
use std::path::PathBuf;

use fragstate_core::{Error, Result};

use crate::args::{ClusterArgs, CodingArgs};
use crate::cluster::{Progress, client, connect, runtime};

pub(crate) fn put(args: ClusterArgs, coding: CodingArgs, src: PathBuf, path: String, overwrite: bool) -> Result<()> {
    let params = coding.params()?;
    runtime()?.block_on(async {
        let node = connect(&args, args.wait_nodes.unwrap_or(params.fragments())).await?;
        let r = async {
            let c = client(&node, &args, Some(&coding))?;
            let (mut input, total): (Box<dyn Read + Send>, Option<u64>) = if src.as_os_str() == "-" {
                (Box::new(std::io::stdin()), None)
            } else {
                let f = std::fs::File::open(&src).map_err(|e| Error::io(format!("open {}", src.display()), e))?;
                let len = f.metadata().map(|m| m.len()).ok();
                (Box::new(f), len)
            };
            let mut w = c.create(&path, overwrite).await?;
            let mut progress = Progress::new("put", total);
            let mut buf = vec![0u8; 4 << 20];
            loop {
                let n = tokio::task::block_in_place(|| input.read(&mut buf)).map_err(|e| Error::io(format!("read {}", src.display()), e))?;
                if n == 0 {
                    break;
                }
                w.write(&buf[..n]).await?;
                progress.update(w.position());
            }
            let m = w.close().await?;
            println!("put {path}: {}; replaced {}; holders {:?}", progress.done(m.length), c.stats().fragments_replaced, m.holders);
            Ok(())
        }
        .await;
        node.shutdown().await;
        r
    })
}
