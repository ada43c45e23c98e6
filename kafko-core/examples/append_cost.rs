//! What one buffered `write` append costs this machine's kernel, by size: the floor under
//! the writer's group commit (bench/README.md, ninth pass). No kafko code runs here.
//!
//! `cargo run --release -p kafko-core --example append_cost -- [DIR] [SIZE ...]`
//! (defaults: a temp dir under `target/`; 312 1248 2496 4992 8192 9984 16384 65536 bytes,
//! 312 being one framed 256 B record and 4992 a group of 16). Each size appends 16 MiB
//! to a fresh file.

use std::error::Error;
use std::io::Write;
use std::time::Instant;

/// Appended per size; each file is fsynced (untimed) before the next size starts, so the
/// larger sizes do not run into the kernel's dirty-page throttling left by the smaller.
const TOTAL: usize = 16 << 20;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let parent = args.next().unwrap_or_else(|| "target".into());
    let mut sizes: Vec<usize> = args.map(|s| s.parse()).collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        sizes = vec![312, 1248, 2496, 4992, 8192, 9984, 16384, 65536];
    }
    std::fs::create_dir_all(&parent)?;
    let dir = tempfile::tempdir_in(&parent)?;
    for size in sizes {
        let path = dir.path().join(size.to_string());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        let chunk = vec![7u8; size];
        let writes = TOTAL / size;
        let start = Instant::now();
        for _ in 0..writes {
            file.write_all(&chunk)?;
        }
        let per_write = start.elapsed().as_secs_f64() * 1e6 / writes as f64;
        println!(
            "{size:>6} B: {per_write:>7.2} µs a write, {:>5.2} µs a KiB",
            per_write * 1024.0 / size as f64
        );
        file.sync_all()?;
        drop(file);
        std::fs::remove_file(&path)?;
    }
    Ok(())
}
