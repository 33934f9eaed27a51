//! The initramfs: busybox (static), the statically linked agent, and an
//! `/init` that runs the agent once per program and writes each one's
//! output between markers on the data port ([`super::guest`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::host::{run_bounded, which, workspace};
use super::LabOptions;

/// The `/init` of the guest: mounts, `lo` up, then `reuseport-agent` once
/// per program with its arguments (and `--output`), every result on
/// `/dev/ttyS1` between markers ([`super::parse_guest_output`]), then power
/// off.
pub fn init_script(layouts: &[(String, Vec<String>)]) -> String {
    let mut s = String::from(
        "#!/bin/busybox sh\n\
         # /init of a lab guest, written by reuseport-agent (agent/src/lab/initramfs.rs).\n\
         /bin/busybox --install -s /bin\n\
         export PATH=/bin\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         ip link set lo up\n\
         stty -F /dev/ttyS1 raw -echo 2>/dev/null\n\
         exec 3>/dev/ttyS1\n\
         say() { echo \"$*\" >&3; }\n\
         say @@RPL-BEGIN 1\n\
         say @@RPL-KERNEL \"$(cat /proc/sys/kernel/osrelease)\"\n\
         say @@RPL-VERSION \"$(cat /proc/version)\"\n\
         say @@RPL-CPUS \"$(nproc)\"\n",
    );
    for (name, args) in layouts {
        let quoted: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
        let name_q = sh_quote(name);
        s.push_str(&format!(
            "if /reuseport-agent {} --output /tmp/trace.json 2>/tmp/record.err; then\n  \
               say @@RPL-TRACE {name_q}; cat /tmp/trace.json >&3; echo >&3\n\
             else\n  \
               say @@RPL-FAILED {name_q} rc=$?; tail -c 2000 /tmp/record.err >&3; echo >&3\n\
             fi\n\
             say @@RPL-END {name_q}\n\
             rm -f /tmp/trace.json /tmp/record.err\n",
            quoted.join(" ")
        ));
    }
    s.push_str("say @@RPL-DONE\nexec 3>&-\nsync\npoweroff -f\n");
    s
}

fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b".,:_=/+-".contains(&c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Whether `bytes` is an x86-64 ELF executable with no program interpreter
/// (statically linked, so it runs in an initramfs without a libc).
pub fn is_static_x86_64_elf(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[o..o + 8]);
        u64::from_le_bytes(b)
    };
    if u16_at(18) != 0x3e {
        return Err("not an x86-64 executable".into());
    }
    let (phoff, phentsize, phnum) = (
        u64_at(32) as usize,
        u16_at(54) as usize,
        u16_at(56) as usize,
    );
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if o + 4 > bytes.len() {
            return Err("its program headers are cut off".into());
        }
        if u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) == 3 {
            return Err("it is dynamically linked (it names a program interpreter)".into());
        }
    }
    Ok(())
}

/// The static agent for the guests: `--guest-agent`, or built from the
/// source tree.
pub fn guest_agent(
    opts: &LabOptions,
    scratch: &Path,
    err: &mut dyn Write,
) -> Result<PathBuf, String> {
    let path = match &opts.guest_agent {
        Some(p) => p.clone(),
        None => {
            let ws = workspace().ok_or("no --guest-agent given and the source tree this agent was built from is gone; build one with `cargo build --release --target x86_64-unknown-linux-musl -p reuseport-agent --no-default-features` and pass it with --guest-agent")?;
            let _ = writeln!(err, "{}: building the static guest agent (cargo build --release --target x86_64-unknown-linux-musl)", opts.who);
            run_bounded(
                Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
                    .args(["build", "--release", "-q", "--target", "x86_64-unknown-linux-musl", "-p", "reuseport-agent", "--no-default-features"])
                    .current_dir(&ws),
                "building the static guest agent (needs `rustup target add x86_64-unknown-linux-musl`, done by scripts/setup.sh)",
                Duration::from_secs(1800),
                scratch,
                1 << 20,
            )?;
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| ws.join("target"));
            target.join("x86_64-unknown-linux-musl/release/reuseport-agent")
        }
    };
    let bytes = fs::read(&path).map_err(|e| format!("guest agent {}: {e}", path.display()))?;
    is_static_x86_64_elf(&bytes).map_err(|e| {
        format!("guest agent {}: {e}; build it with `cargo build --release --target x86_64-unknown-linux-musl -p reuseport-agent --no-default-features`", path.display())
    })?;
    Ok(path)
}

/// Packs the initramfs: `/init`, `/bin/busybox`, `/reuseport-agent`.
pub fn initramfs(
    agent: &Path,
    layouts: &[(String, Vec<String>)],
    dir: &Path,
) -> Result<PathBuf, String> {
    let busybox = Path::new("/bin/busybox");
    let bytes = fs::read(busybox).map_err(|_| {
        "/bin/busybox is missing; install busybox-static (scripts/setup.sh does)".to_string()
    })?;
    is_static_x86_64_elf(&bytes).map_err(|e| {
        format!("/bin/busybox: {e}; install busybox-static (scripts/setup.sh does)")
    })?;
    if which("cpio").is_none() {
        return Err("cpio not found; install it (scripts/setup.sh does)".into());
    }
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    let mk = |p: &Path| fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()));
    for d in ["bin", "proc", "sys", "dev", "tmp"] {
        mk(&root.join(d))?;
    }
    let copy = |from: &Path, to: &Path| {
        fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("copying {}: {e}", from.display()))
    };
    copy(busybox, &root.join("bin/busybox"))?;
    copy(agent, &root.join("reuseport-agent"))?;
    fs::write(root.join("init"), init_script(layouts))
        .map_err(|e| format!("writing /init: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in ["init", "bin/busybox", "reuseport-agent"] {
            fs::set_permissions(root.join(f), fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("chmod {f}: {e}"))?;
        }
    }
    let cpio = dir.join("initramfs.cpio");
    let script = "cd \"$1\" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 > \"$2\"";
    run_bounded(
        Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&root)
            .arg(&cpio),
        "cpio",
        Duration::from_secs(120),
        dir,
        1 << 16,
    )?;
    let _ = fs::remove_dir_all(&root);
    Ok(cpio)
}
