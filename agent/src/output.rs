//! Where a result file goes, checked before anything is measured and
//! written without damaging what is there: the one way `record -o`,
//! `scenario -o`, `calibrate` and `verify --kernels --write-record` write.
//!
//! [`Output::prepare`] looks at the path first:
//!
//! - a regular file, or a name not taken yet, gets an unnamed file in the
//!   same directory now (`O_TMPFILE`: a run killed before the end leaves
//!   nothing behind; a hidden `.NAME.PID.partial` where the file system
//!   has no unnamed files), so an unwritable or missing directory is found
//!   before the measurement. [`Output::commit`] writes the whole text
//!   there, syncs it, and renames it over the path: an existing file
//!   keeps its content until then, and a full disk leaves it as it was;
//! - a symbolic link is followed first: the file it names is replaced, the
//!   link stays;
//! - this process's own standard output or error (`/dev/stdout`,
//!   `/proc/self/fd/1`, a link to either) is written to as it is;
//! - a character device (`/dev/null`) or a FIFO is opened and written
//!   through, never replaced;
//! - anything else (a directory, a block device, a socket) is refused.

#![cfg(unix)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Symbolic links followed before a path is refused as a loop (the
/// kernel's own limit, `MAXSYMLINKS` in fs/namei.c).
const MAX_LINKS: usize = 40;

/// A checked destination for one result file.
#[derive(Debug)]
pub struct Output {
    /// The path as given, for messages.
    given: PathBuf,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// A regular file replaced by a rename.
    Replace {
        /// The file replaced (symbolic links followed).
        target: PathBuf,
        /// The file written first, in the target's directory.
        tmp: File,
        /// Its name when it has one (no `O_TMPFILE`).
        named: Option<PathBuf>,
    },
    /// This process's standard output (1) or error (2).
    Stdio(i32),
    /// A character device or a FIFO, opened when the text is whole (a
    /// FIFO's open waits for a reader).
    Through(PathBuf),
}

fn refused(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}; name a regular file (or a character device such as /dev/null, or a FIFO)"),
    )
}

/// `path` with every symbolic link along the last component followed,
/// also a link whose target does not exist yet.
fn follow(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("more than {MAX_LINKS} symbolic links in a row"),
    ))
}

/// The standard stream (1 or 2) that is the same open file as `m`.
fn stdio_of(m: &fs::Metadata) -> Option<i32> {
    [1, 2].into_iter().find(|&fd| {
        // SAFETY: fstat writes one stat into a zeroed buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
        ok && st.st_dev == m.dev() && st.st_ino == m.ino()
    })
}

impl Output {
    /// Checks `path` and, for a regular file, makes the file the text is
    /// written to first (see the module docs). The error says why the path
    /// cannot take the result.
    pub fn prepare(path: &Path) -> io::Result<Output> {
        let given = path.to_path_buf();
        let kind = match fs::metadata(path) {
            Ok(m) => {
                let t = m.file_type();
                if let Some(fd) = stdio_of(&m) {
                    Kind::Stdio(fd)
                } else if t.is_file() {
                    Kind::replace(&fs::canonicalize(path)?, Some(&m))?
                } else if t.is_char_device() || t.is_fifo() {
                    // Found now, not after the measurement.
                    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
                        .map_err(|_| refused("a name with a NUL byte"))?;
                    // SAFETY: access reads one C string.
                    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Kind::Through(path.to_path_buf())
                } else if t.is_dir() {
                    return Err(refused("a directory"));
                } else if t.is_block_device() {
                    return Err(refused("a block device"));
                } else {
                    return Err(refused(
                        "neither a regular file nor a character device or FIFO",
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Kind::replace(&follow(path)?, None)?,
            Err(e) => return Err(e),
        };
        Ok(Output { given, kind })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.given
    }

    /// Whether the text goes to this process's standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.kind, Kind::Stdio(1))
    }

    /// [`Output::commit`], and when that fails for any reason but a closed
    /// pipe (a full disk), `text` on standard output instead, said on
    /// standard error by `who`: the result is not lost. `Ok(true)` when it
    /// went there. The error names where the text could not go.
    pub fn commit_or_stdout(self, text: &[u8], who: &str) -> Result<bool, (String, io::Error)> {
        let path = self.given.display().to_string();
        let stdout = self.is_stdout();
        let kept = if matches!(self.kind, Kind::Replace { .. }) {
            format!("; {path} is as it was")
        } else {
            String::new()
        };
        match self.commit(text) {
            Ok(()) => Ok(false),
            Err(e) if stdout || e.kind() == io::ErrorKind::BrokenPipe => Err((path, e)),
            Err(e) => {
                crate::note!(
                    "{who}: cannot write to {path}: {e}; the whole result is written to standard output instead{kept}"
                );
                let mut out = io::stdout().lock();
                out.write_all(text)
                    .and_then(|()| out.flush())
                    .map_err(|e| ("standard output".to_string(), e))?;
                Ok(true)
            }
        }
    }

    /// Writes `text` whole: into the file made by [`Output::prepare`],
    /// synced and renamed over the path, or through to the stream, device
    /// or FIFO. On an error an existing regular file is left as it was.
    pub fn commit(mut self, text: &[u8]) -> io::Result<()> {
        match std::mem::replace(&mut self.kind, Kind::Stdio(-1)) {
            Kind::Stdio(1) => {
                let mut out = io::stdout().lock();
                out.write_all(text).and_then(|()| out.flush())
            }
            Kind::Stdio(_) => io::stderr().lock().write_all(text),
            Kind::Through(p) => {
                let mut f = OpenOptions::new().write(true).open(p)?;
                f.write_all(text).and_then(|()| f.flush())
            }
            Kind::Replace {
                target,
                mut tmp,
                named,
            } => {
                let done = tmp.write_all(text).and_then(|()| tmp.sync_all());
                let named = match named {
                    Some(n) => done.map(|()| n),
                    None => done.and_then(|()| link_unnamed(&tmp, &target)),
                };
                let named = named?;
                fs::rename(&named, &target).inspect_err(|_| {
                    let _ = fs::remove_file(&named);
                })
            }
        }
    }
}

impl Kind {
    /// An unnamed file in `target`'s directory (a hidden named one where
    /// the file system has none), with the permissions of the file it
    /// replaces.
    fn replace(target: &Path, existing: Option<&fs::Metadata>) -> io::Result<Kind> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let unnamed = unnamed_in(dir);
        let (tmp, named) = match unnamed {
            Ok(f) => (f, None),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                ) =>
            {
                let n = hidden(target, "partial");
                (
                    OpenOptions::new().write(true).create_new(true).open(&n)?,
                    Some(n),
                )
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("its directory {} does not exist", dir.display()),
                ))
            }
            Err(e) => return Err(e),
        };
        if let Some(m) = existing {
            let _ = tmp.set_permissions(fs::Permissions::from_mode(m.permissions().mode()));
        }
        Ok(Kind::Replace {
            target: target.to_path_buf(),
            tmp,
            named,
        })
    }
}

impl Drop for Output {
    /// An output dropped without [`Output::commit`] (the run failed)
    /// removes its named temporary file; the path is untouched.
    fn drop(&mut self) {
        if let Kind::Replace { named: Some(n), .. } = &self.kind {
            let _ = fs::remove_file(n);
        }
    }
}

/// An unnamed file in `dir` (`O_TMPFILE`, Linux 3.11).
#[cfg(target_os = "linux")]
fn unnamed_in(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .mode(0o644)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
}

/// Elsewhere there is none: the caller makes a named file.
#[cfg(not(target_os = "linux"))]
fn unnamed_in(_: &Path) -> io::Result<File> {
    Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// `.NAME.PID.what` beside `target`.
fn hidden(target: &Path, what: &str) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    target.with_file_name(format!(".{name}.{}.{what}", std::process::id()))
}

/// Gives the unnamed file `tmp` a hidden name beside `target`, to be
/// renamed over it.
fn link_unnamed(tmp: &File, target: &Path) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    let named = hidden(target, "new");
    let from =
        std::ffi::CString::new(format!("/proc/self/fd/{}", tmp.as_raw_fd())).expect("no NUL");
    let to = std::ffi::CString::new(named.as_os_str().as_encoded_bytes())
        .map_err(|_| refused("a name with a NUL byte"))?;
    // SAFETY: linkat reads two C strings.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(named)
}
