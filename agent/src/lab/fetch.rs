//! Fetch: Debian's kernel images, resolved and downloaded with apt under a
//! throw-away configuration of the lab's own (the machine's apt setup is
//! never read or changed), cached as the bare `vmlinuz` in
//! `CACHE/<suite>/`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::host::{run_bounded, which};
use super::LabOptions;

/// The Debian suites the lab knows, with the kernel series each
/// ships (`None` for sid, whose series moves; 7.2 when this was written).
pub const SUITES: &[(&str, Option<&str>)] = &[
    ("bullseye", Some("5.10")),
    ("bookworm", Some("6.1")),
    ("trixie", Some("6.12")),
    ("sid", None),
];

/// Largest kernel package `fetch` downloads (the 6.12 image is about 108 MB).
pub const MAX_PACKAGE_BYTES: u64 = 256 << 20;

/// The Debian mirror kernels are fetched from unless `--mirror` says otherwise.
pub const MIRROR: &str = "http://deb.debian.org/debian";

/// A name that is not a Debian kernel the lab boots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKernel(pub String);

impl std::fmt::Display for UnknownKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is not a Debian kernel the lab boots; name 5.10, 6.1, 6.12, sid (or bullseye, bookworm, trixie, or sid's series such as 7.2)",
            self.0
        )
    }
}

/// One kernel asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// As named on the command line (`6.1`, `sid`, `7.2`).
    pub name: String,
    /// The Debian suite it comes from.
    pub suite: String,
    /// The series required (`None`: whatever the suite ships).
    pub series: Option<String>,
}

/// Turns a list of kernel names into requests, in the order given, without repeats.
pub fn requests(list: &[String]) -> Result<Vec<Request>, UnknownKernel> {
    let mut out: Vec<Request> = Vec::new();
    let mut push = |r: Request| {
        if !out
            .iter()
            .any(|o| o.suite == r.suite && o.series == r.series)
        {
            out.push(r);
        }
    };
    for item in list {
        let item = item.trim();
        if item == "all" {
            for (suite, series) in SUITES {
                push(Request {
                    name: series.unwrap_or(suite).to_string(),
                    suite: suite.to_string(),
                    series: series.map(String::from),
                });
            }
            continue;
        }
        if let Some((suite, series)) = SUITES.iter().find(|(s, v)| *s == item || *v == Some(item)) {
            push(Request {
                name: item.to_string(),
                suite: suite.to_string(),
                series: series.map(String::from),
            });
            continue;
        }
        // Any other MAJOR.MINOR can only be sid's (checked once resolved).
        let mut parts = item.split('.');
        let numeric = matches!((parts.next(), parts.next(), parts.next()),
            (Some(a), Some(b), None) if !a.is_empty() && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()));
        if !numeric {
            return Err(UnknownKernel(item.to_string()));
        }
        push(Request {
            name: item.to_string(),
            suite: "sid".into(),
            series: Some(item.to_string()),
        });
    }
    Ok(out)
}

/// The image used for a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Debian package.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The release in the package (`uname -r` once booted).
    pub release: String,
    /// The kernel file (in `image.json`: its name in the suite's cache directory).
    pub vmlinuz: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was downloaded.
    pub fetched: String,
}

/// From `apt-cache show` output, the names in the first stanza's `Depends`
/// (first alternative of each, versions dropped).
pub fn depends(show: &str) -> Vec<String> {
    let stanza = show.split("\n\n").next().unwrap_or("");
    let Some(line) = stanza.lines().find_map(|l| l.strip_prefix("Depends:")) else {
        return Vec::new();
    };
    line.split(',')
        .filter_map(|d| d.split('|').next())
        .filter_map(|d| d.split_whitespace().next())
        .map(|d| d.split(':').next().unwrap_or(d).to_string())
        .collect()
}

/// A field of the first stanza of `apt-cache show` output.
pub fn field(show: &str, name: &str) -> Option<String> {
    let stanza = show.split("\n\n").next().unwrap_or("");
    stanza
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// The release of a kernel file from its path in the package:
/// `boot/vmlinuz-<release>`, or `usr/lib/modules/<release>/vmlinuz` (the
/// `linux-binary-*` packages of 7.x).
pub fn release_from_path(path: &str) -> Option<String> {
    let path = path.trim_start_matches("./");
    if let Some(r) = path.strip_prefix("boot/vmlinuz-") {
        return (!r.is_empty() && !r.contains('/')).then(|| r.to_string());
    }
    let rest = path
        .strip_prefix("usr/lib/modules/")
        .or_else(|| path.strip_prefix("lib/modules/"))?;
    let (release, file) = rest.split_once('/')?;
    (file == "vmlinuz" && !release.is_empty()).then(|| release.to_string())
}

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Resolves, downloads and caches one suite's kernel image.
pub fn fetch(
    req: &Request,
    opts: &LabOptions,
    cache: &Path,
    err: &mut dyn Write,
) -> Result<Image, String> {
    let dir = cache.join(&req.suite);
    let meta = dir.join("image.json");
    if !opts.refresh {
        if let Ok(text) = fs::read_to_string(&meta) {
            if let Ok(img) = serde_json::from_str::<Image>(&text) {
                let img = Image {
                    vmlinuz: dir.join(&img.vmlinuz),
                    ..img
                };
                if img.vmlinuz.is_file() {
                    let _ = writeln!(
                        err,
                        "{}: {}: cached {} ({})",
                        opts.who, req.name, img.package, img.version
                    );
                    return Ok(img);
                }
            }
        }
    }
    if !Path::new(KEYRING).is_file() {
        return Err(format!("{KEYRING} is missing, so Debian's archive cannot be authenticated; install the debian-archive-keyring package"));
    }
    for tool in ["apt-get", "apt-cache", "dpkg-deb", "tar"] {
        if which(tool).is_none() {
            return Err(format!("{tool} not found; fetching Debian's kernels needs apt and dpkg (a Debian or Ubuntu host)"));
        }
    }
    let apt = cache.join("apt").join(&req.suite);
    let _ = fs::remove_dir_all(&apt);
    // The lists and the package go whatever happens (about 50 MB and 70–110 MB):
    // only the kernel stays.
    let result = download(req, opts, &dir, &apt, err);
    let _ = fs::remove_dir_all(&apt);
    let _ = fs::remove_dir(cache.join("apt"));
    result
}

/// Whether a kernel version or release (`6.1.176-1`, `6.1.0-50-amd64`,
/// `7.2.13+deb14-amd64`) is of `series` (`6.1`).
pub fn in_series(version: &str, series: &str) -> bool {
    version
        .strip_prefix(series)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '-', '+']))
}

/// `fetch` past the cache: apt under its own configuration in `apt`, the
/// kernel into `dir`.
fn download(
    req: &Request,
    opts: &LabOptions,
    dir: &Path,
    apt: &Path,
    err: &mut dyn Write,
) -> Result<Image, String> {
    let meta = dir.join("image.json");
    let mkdir =
        |p: &Path| fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()));
    for d in [
        "lists/partial",
        "cache/archives/partial",
        "empty",
        "download",
        "logs",
    ] {
        mkdir(&apt.join(d))?;
    }
    let abs = fs::canonicalize(apt).map_err(|e| format!("{}: {e}", apt.display()))?;
    fs::write(
        abs.join("sources.list"),
        format!(
            "deb [signed-by={KEYRING}] {} {} main\n",
            opts.mirror, req.suite
        ),
    )
    .map_err(|e| format!("cannot write the apt sources: {e}"))?;
    // A configuration of its own: no /etc/apt/apt.conf.d (its hooks and extra
    // index targets), no dpkg status, amd64 and main only.
    let conf = format!(
        "Dir::Etc::Parts \"{d}/empty\";\nDir::Etc::Main \"{d}/empty/none\";\nDir::Etc::SourceList \"{d}/sources.list\";\n\
         Dir::Etc::SourceParts \"{d}/empty\";\nDir::Etc::Preferences \"{d}/empty/none\";\nDir::Etc::PreferencesParts \"{d}/empty\";\n\
         Dir::State \"{d}\";\nDir::State::Lists \"{d}/lists\";\nDir::State::status \"/dev/null\";\nDir::Cache \"{d}/cache\";\n\
         Dir::Log \"{d}/logs\";\nAcquire::Languages \"none\";\nAPT::Architectures {{ \"amd64\"; }};\n\
         APT::Sandbox::User \"root\";\nAcquire::Check-Valid-Until \"false\";\nAcquire::Retries \"2\";\nAcquire::http::Timeout \"60\";\n",
        d = abs.display()
    );
    let conf_path = abs.join("apt.conf");
    fs::write(&conf_path, conf).map_err(|e| format!("cannot write the apt configuration: {e}"))?;
    let logs = abs.join("logs");
    let apt_cmd = |prog: &str| {
        let mut c = Command::new(prog);
        c.env("APT_CONFIG", &conf_path)
            .env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    let _ = writeln!(
        err,
        "{}: {}: apt-get update ({} {} main)",
        opts.who, req.name, opts.mirror, req.suite
    );
    run_bounded(
        apt_cmd("apt-get").args(["-q", "update"]),
        "apt-get update",
        Duration::from_secs(600),
        &logs,
        1 << 20,
    )?;
    let show = |pkg: &str| {
        run_bounded(
            apt_cmd("apt-cache").args(["show", "--no-all-versions", pkg]),
            &format!("apt-cache show {pkg}"),
            Duration::from_secs(120),
            &logs,
            1 << 20,
        )
    };
    let meta_show = show("linux-image-amd64")?;
    let image = depends(&meta_show)
        .into_iter()
        .find(|d| d.starts_with("linux-image-"))
        .ok_or_else(|| {
            format!(
                "linux-image-amd64 in {} depends on no linux-image-* package",
                req.suite
            )
        })?;
    let image_show = show(&image)?;
    // From 7.x the image package is an empty dependency package; the kernel
    // itself is in linux-binary-*.
    let package = depends(&image_show)
        .into_iter()
        .find(|d| d.starts_with("linux-binary-"))
        .unwrap_or(image);
    let pkg_show = if package.starts_with("linux-binary-") {
        show(&package)?
    } else {
        image_show
    };
    let version = field(&pkg_show, "Version").unwrap_or_default();
    let wrong_series = |found: &str| {
        match &req.series {
        Some(series) if !in_series(found, series) => Some(format!(
            "{} ships {found}, not a {series} kernel (bullseye has 5.10, bookworm 6.1, trixie 6.12, sid the newest)",
            req.suite
        )),
        _ => None,
    }
    };
    if let Some(e) = wrong_series(&version) {
        return Err(e);
    }
    let size: u64 = field(&pkg_show, "Size")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if size > MAX_PACKAGE_BYTES {
        return Err(format!(
            "{package} is {} MB, more than the {} MB this command downloads",
            size >> 20,
            MAX_PACKAGE_BYTES >> 20
        ));
    }
    let _ = writeln!(
        err,
        "{}: {}: downloading {package} {version} ({} MB)",
        opts.who,
        req.name,
        size >> 20
    );
    let download = abs.join("download");
    run_bounded(
        apt_cmd("apt-get")
            .args(["-q", "download", &package])
            .current_dir(&download),
        &format!("apt-get download {package}"),
        Duration::from_secs(1200),
        &logs,
        1 << 20,
    )?;
    let deb = fs::read_dir(&download)
        .map_err(|e| format!("{}: {e}", download.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| format!("apt-get download {package} left no .deb"))?;
    let extract = abs.join("extract");
    mkdir(&extract)?;
    let script = "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards '*vmlinuz*'";
    run_bounded(
        Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&deb)
            .arg(&extract),
        &format!("extracting the kernel from {}", deb.display()),
        Duration::from_secs(300),
        &logs,
        1 << 20,
    )?;
    let mut found = None;
    for rel in ["boot", "usr/lib/modules", "lib/modules"] {
        let base = extract.join(rel);
        let Ok(entries) = fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let candidates = if p.is_dir() {
                vec![p.join("vmlinuz")]
            } else {
                vec![p]
            };
            for c in candidates {
                let inside = c
                    .strip_prefix(&extract)
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if let (true, Some(r)) = (c.is_file(), release_from_path(&inside)) {
                    found = Some((c, r));
                }
            }
        }
    }
    let (file, release) = found
        .ok_or_else(|| format!("{package} holds no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz"))?;
    if let Some(e) = wrong_series(&release) {
        return Err(e);
    }
    mkdir(dir)?;
    let vmlinuz = dir.join(format!("vmlinuz-{release}"));
    fs::copy(&file, &vmlinuz)
        .map_err(|e| format!("cannot copy the kernel into {}: {e}", dir.display()))?;
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("vmlinuz-") && p != vmlinuz {
            let _ = fs::remove_file(&p);
        }
    }
    let mut img = Image {
        package,
        version,
        bytes: fs::metadata(&vmlinuz).map(|m| m.len()).unwrap_or(0),
        // Stored relative to the suite's directory, so the cache can move.
        vmlinuz: PathBuf::from(format!("vmlinuz-{release}")),
        release,
        fetched: crate::rfc3339(SystemTime::now()),
    };
    fs::write(
        &meta,
        serde_json::to_string_pretty(&img).unwrap_or_default(),
    )
    .map_err(|e| format!("cannot write {}: {e}", meta.display()))?;
    img.vmlinuz = vmlinuz;
    Ok(img)
}
