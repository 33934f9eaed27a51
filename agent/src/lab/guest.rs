//! What comes back from a guest: how QEMU ended, and the data port's
//! text, parsed into each program's output.

/// Largest guest output read back (a 1,000-event trace is about 150 kB).
pub const MAX_GUEST_OUTPUT: u64 = 64 << 20;
/// Where the guest's output lines begin; every marker line starts with this.
pub const MARK: &str = "@@RPL-";

/// What the guest printed on its data port, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuestOutput {
    /// `@@RPL-BEGIN` was seen: `/init` ran.
    pub began: bool,
    /// The release the guest reported.
    pub release: Option<String>,
    /// The guest's `/proc/version` (Debian's package version is in it).
    pub version: Option<String>,
    /// CPUs the guest saw.
    pub cpus: Option<u32>,
    /// Per layout, in order: the trace text, or why recording failed.
    pub traces: Vec<(String, Result<String, String>)>,
    /// `@@RPL-DONE` was seen: every layout was attempted.
    pub done: bool,
}

/// Parses the guest's data port. The protocol, one marker per line
/// (`\r` ignored):
///
/// ```text
/// @@RPL-BEGIN 1
/// @@RPL-KERNEL <uname -r>
/// @@RPL-VERSION </proc/version>
/// @@RPL-CPUS <n>
/// @@RPL-TRACE <layout>      the trace JSON follows, up to
/// @@RPL-END <layout>
/// @@RPL-FAILED <layout> rc=<status>   the recorder's stderr follows, up to
/// @@RPL-END <layout>
/// @@RPL-DONE
/// ```
///
/// A section cut off by the end of the output (the guest died or was
/// killed) becomes a failure of that layout.
pub fn parse_guest_output(text: &str) -> GuestOutput {
    let mut out = GuestOutput::default();
    // (layout, failed?, body)
    let mut open: Option<(String, Option<String>, String)> = None;
    for raw in text.split('\n') {
        let line = raw.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix(MARK) {
            let (word, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            let arg = arg.trim();
            match word {
                "END" => {
                    if let Some((name, failed, body)) = open.take() {
                        let result = match failed {
                            None => Ok(body),
                            Some(status) => Err(format!(
                                "the recorder exited with {status}: {}",
                                body.trim()
                            )),
                        };
                        out.traces.push((name, result));
                    }
                    continue;
                }
                "BEGIN" => out.began = true,
                "KERNEL" if !arg.is_empty() => out.release = Some(arg.to_string()),
                "VERSION" if !arg.is_empty() => out.version = Some(arg.to_string()),
                "CPUS" => out.cpus = arg.parse().ok(),
                "TRACE" => open = Some((arg.to_string(), None, String::new())),
                "FAILED" => {
                    let (name, status) = arg.split_once(' ').unwrap_or((arg, "rc=?"));
                    open = Some((name.to_string(), Some(status.to_string()), String::new()));
                }
                "DONE" => out.done = true,
                _ => {}
            }
            if word != "TRACE" && word != "FAILED" {
                if let Some((name, _, _)) = open.take() {
                    out.traces
                        .push((name, Err("the trace was cut off by another marker".into())));
                }
            }
            continue;
        }
        if let Some((_, _, body)) = open.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some((name, _, _)) = open {
        out.traces.push((
            name,
            Err("the output ended inside this layout (the guest stopped or was killed while recording)".into()),
        ));
    }
    out
}

/// How the QEMU process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootEnd {
    /// It exited by itself (the guest powered off, or QEMU gave up).
    Exited {
        /// Its exit status (`None`: killed by a signal).
        code: Option<i32>,
    },
    /// It ran past the timeout and was killed.
    TimedOut {
        /// The timeout, in seconds.
        after: u64,
    },
    /// It could not be started.
    NotStarted(String),
}

/// One guest run, as seen from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestRun {
    /// How QEMU ended.
    pub end: BootEnd,
    /// The data port's text.
    pub output: String,
    /// The last lines of the console (kernel messages), for the report.
    pub console_tail: String,
}

/// How QEMU ended, in words, and the console's last lines as a clause to
/// append to a message (empty when the console said nothing).
pub fn ending(run: &GuestRun) -> (String, String) {
    let how = match &run.end {
        BootEnd::Exited { code: Some(c) } => format!("QEMU exited with status {c}"),
        BootEnd::Exited { code: None } => "QEMU was killed by a signal".to_string(),
        BootEnd::TimedOut { after } => {
            format!("the guest was still running after {after} s and QEMU was killed")
        }
        BootEnd::NotStarted(why) => why.clone(),
    };
    let tail = if run.console_tail.trim().is_empty() {
        String::new()
    } else {
        format!(
            "; console ends: {}",
            super::host::one_line(&run.console_tail, 300)
        )
    };
    (how, tail)
}

/// The guest's output when it reached `/init` and reported its release
/// (the release, then the output); otherwise why it did not boot. Nothing
/// a guest printed counts before that.
pub fn booted(run: &GuestRun) -> Result<(String, GuestOutput), String> {
    let (how, tail) = ending(run);
    if let BootEnd::NotStarted(_) = run.end {
        return Err(how);
    }
    let out = parse_guest_output(&run.output);
    match out.release.clone().filter(|_| out.began) {
        Some(release) => Ok((release, out)),
        None => Err(format!(
            "the guest never reached /init and reported its release ({how}){tail}"
        )),
    }
}
