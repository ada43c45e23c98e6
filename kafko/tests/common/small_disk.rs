//! A small real filesystem for the disk-full tests: an ext4 image, loop-mounted (root
//! and loop devices needed; elsewhere the tests say SKIP and pass), and a filler that
//! takes its last free block.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop-mounted ext4 image, unmounted on drop.
pub struct SmallDisk {
    pub mount: PathBuf,
}

impl SmallDisk {
    pub fn new(dir: &Path, mib: u32) -> Result<SmallDisk, String> {
        let image = dir.join("disk.img");
        let mount = dir.join("mnt");
        std::fs::create_dir_all(&mount).map_err(|e| e.to_string())?;
        let file = std::fs::File::create(&image).map_err(|e| e.to_string())?;
        file.set_len(u64::from(mib) << 20)
            .map_err(|e| e.to_string())?;
        run(
            "mkfs.ext4",
            &["-q", "-F", "-m", "0", image.to_str().unwrap()],
        )?;
        run(
            "mount",
            &[
                "-o",
                "loop",
                image.to_str().unwrap(),
                mount.to_str().unwrap(),
            ],
        )?;
        Ok(SmallDisk { mount })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazy: a still-open descriptor must not leave the mount behind.
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A 16 MiB disk under `dir`, or `None` (the skip said, naming the test `what`) where
/// the machine does not allow one.
pub fn small_disk_or_skip(dir: &Path, what: &str) -> Option<SmallDisk> {
    SmallDisk::new(dir, 16)
        .map_err(|reason| {
            eprintln!("SKIP {what}: cannot loop-mount a small ext4 filesystem here ({reason})")
        })
        .ok()
}

/// Fills what is left of the filesystem at `dir` with a file of zeros (`filler`), to
/// the last byte: a small filesystem has 1 KiB blocks.
pub fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    for chunk in [4096, 1] {
        let zeros = vec![0u8; chunk];
        while f.write_all(&zeros).is_ok() {}
    }
    let _ = f.sync_all();
}
