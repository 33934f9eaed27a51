//! Boot: QEMU with the kernel and the initramfs, the console and the data
//! port each to a file, killed at its timeout, on a signal, or when the
//! agent dies.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::guest::{BootEnd, GuestRun, MAX_GUEST_OUTPUT};
use super::host::{read_limited, read_tail, which};
use super::Accel;

/// QEMU gets SIGKILL when the agent dies (Ctrl-C, a test runner's
/// timeout), so no guest is ever left running.
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Boots `vmlinuz` with `initrd` on `cpus` vCPUs, the data port going to a
/// file in `dir`.
pub fn boot(
    vmlinuz: &Path,
    initrd: &Path,
    dir: &Path,
    timeout: u64,
    accel: Accel,
    cpus: u32,
) -> GuestRun {
    let data = dir.join("guest.out");
    let console = dir.join("console.log");
    let _ = fs::remove_file(&data);
    let _ = fs::remove_file(&console);
    let qemu = "qemu-system-x86_64";
    if which(qemu).is_none() {
        return GuestRun {
            end: BootEnd::NotStarted(format!(
                "{qemu} not found; install qemu-system-x86 (scripts/setup.sh does)"
            )),
            output: String::new(),
            console_tail: String::new(),
        };
    }
    let mut cmd = Command::new(qemu);
    cmd.args(["-accel", accel.name()])
        .args([
            "-m",
            "512",
            "-smp",
            &cpus.to_string(),
            "-display",
            "none",
            "-monitor",
            "none",
            "-nic",
            "none",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 panic=-1 quiet"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-serial")
        .arg(format!("file:{}", data.display()))
        .stdin(Stdio::null());
    die_with_parent(&mut cmd);
    let qlog = dir.join("qemu.log");
    match fs::File::create(&qlog).and_then(|f| Ok((f.try_clone()?, f))) {
        Ok((a, b)) => {
            cmd.stdout(a).stderr(b);
        }
        Err(_) => {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
    let end = match cmd.spawn() {
        Err(e) => BootEnd::NotStarted(format!("{qemu} could not be started: {e}")),
        Ok(mut child) => {
            let t0 = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(s)) => break BootEnd::Exited { code: s.code() },
                    Ok(None) if t0.elapsed().as_secs() >= timeout => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break BootEnd::TimedOut { after: timeout };
                    }
                    Ok(None) if crate::signals::stopped() => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break BootEnd::NotStarted("stopped by a signal".into());
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break BootEnd::NotStarted(format!("waiting for {qemu}: {e}"));
                    }
                }
            }
        }
    };
    let mut console_tail = read_tail(&console, 600);
    let qemu_says = read_tail(&qlog, 400);
    if !qemu_says.trim().is_empty() {
        console_tail = format!("{console_tail} [qemu: {}]", qemu_says.trim());
    }
    GuestRun {
        end,
        output: read_limited(&data, MAX_GUEST_OUTPUT).unwrap_or_default(),
        console_tail,
    }
}
