//! Running the host's tools from the lab: bounded in time and output,
//! and read back in part.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `s` on one line, its end kept when it is longer than `max`.
pub fn one_line(s: &str, max: usize) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.len() <= max {
        s
    } else {
        let mut start = s.len() - max;
        while !s.is_char_boundary(start) {
            start += 1;
        }
        format!("…{}", &s[start..])
    }
}

/// The source tree this agent was built from, if it is still there.
pub fn workspace() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    dir.join("Cargo.toml").is_file().then_some(dir)
}

/// Runs a command with stdin empty and stdout and stderr to files, killed
/// after `timeout`. Returns its stdout (at most `max` bytes) or a message
/// with the tail of its stderr.
pub fn run_bounded(
    cmd: &mut Command,
    what: &str,
    timeout: Duration,
    logs: &Path,
    max: u64,
) -> Result<String, String> {
    let out_path = logs.join("cmd.out");
    let err_path = logs.join("cmd.err");
    let open = |p: &Path| {
        fs::File::create(p).map_err(|e| format!("{what}: cannot create {}: {e}", p.display()))
    };
    cmd.stdin(Stdio::null())
        .stdout(open(&out_path)?)
        .stderr(open(&err_path)?);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what}: cannot start it: {e}"))?;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{what}: still running after {} s, killed",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let stdout = read_limited(&out_path, max).unwrap_or_default();
    if !status.success() {
        let err = read_tail(&err_path, 1500);
        return Err(format!(
            "{what} failed ({status}): {}",
            one_line(&err, 1500)
        ));
    }
    Ok(stdout)
}

/// At most `max` bytes of `path`, as text.
pub fn read_limited(path: &Path, max: u64) -> std::io::Result<String> {
    let mut s = Vec::new();
    fs::File::open(path)?.take(max).read_to_end(&mut s)?;
    Ok(String::from_utf8_lossy(&s).into_owned())
}

/// The last `max` bytes of `path`, as text; empty when it cannot be read.
pub fn read_tail(path: &Path, max: u64) -> String {
    let Ok(mut f) = fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    use std::io::Seek;
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(max)));
    let mut s = Vec::new();
    let _ = f.take(max).read_to_end(&mut s);
    String::from_utf8_lossy(&s).into_owned()
}

/// `tool` on `PATH`.
pub fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}
