//! `--kernel`: from a release string, or `auto` for the running kernel, to
//! the model's [`Profile`].

use reuseport_model::Profile;

use crate::error::Error;

/// Where Linux publishes the running release (the `uname -r` string).
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// The running kernel's release (`uname -r`), read from [`OSRELEASE`].
/// Fails off Linux, where the model's rules do not describe the kernel.
pub fn running_release() -> Result<String, Error> {
    if !cfg!(target_os = "linux") {
        return Err(Error::AutoNotLinux);
    }
    std::fs::read_to_string(OSRELEASE)
        .map(|s| s.trim().to_string())
        .map_err(|source| Error::RunningRelease {
            path: OSRELEASE,
            source,
        })
}

/// Resolves a `--kernel` argument: `auto` (the running kernel), a profile
/// name such as `6.18`, or any release such as `6.18.44-fc` or `5.19.3`,
/// which follows the newest profile at or below it.
pub fn resolve(arg: &str) -> Result<&'static Profile, Error> {
    if arg == "auto" {
        let running = running_release()?;
        return Ok(Profile::resolve(arg, Some(&running))?);
    }
    Ok(Profile::resolve(arg, None)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_map_to_profiles() {
        assert_eq!(resolve("6.18").unwrap().release.to_string(), "6.18");
        assert_eq!(resolve("6.18.44-fc").unwrap().release.to_string(), "6.18");
        assert_eq!(resolve("6.14").unwrap().release.to_string(), "6.13");
        assert_eq!(resolve("6.12.80").unwrap().release.to_string(), "6.12");
        assert_eq!(resolve("5.19.3").unwrap().release.to_string(), "5.15");
    }

    #[test]
    fn impossible_kernels_say_why() {
        assert!(resolve("2.6")
            .unwrap_err()
            .to_string()
            .contains("predates SO_REUSEPORT"));
        assert!(resolve("banana")
            .unwrap_err()
            .to_string()
            .contains("MAJOR.MINOR"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn auto_reads_the_running_release() {
        let running = std::fs::read_to_string(OSRELEASE).unwrap();
        match Profile::for_release(running.trim()) {
            Ok(p) => assert_eq!(resolve("auto").unwrap().release, p.release),
            Err(_) => assert!(resolve("auto").is_err()),
        }
    }
}
