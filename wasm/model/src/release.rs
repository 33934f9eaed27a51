//! Kernel release numbers, and the error of a release string that names no
//! profile. The bottom of the crate: the era table ([`crate::profile`]),
//! the messages and the errors all speak of releases.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A kernel release, major and minor (`6.18`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Release {
    /// Major number (the 6 of 6.18).
    pub major: u16,
    /// Minor number (the 18 of 6.18).
    pub minor: u16,
}

impl Release {
    /// Builds a release number.
    pub const fn new(major: u16, minor: u16) -> Self {
        Release { major, minor }
    }

    /// Reads the leading `MAJOR.MINOR` of a `uname -r` string such as
    /// `6.18.44-fc-v657` or `5.15.0-91-generic`.
    pub fn parse_uname(s: &str) -> Result<Release, ProfileError> {
        let bad = || ProfileError::BadRelease(s.to_string());
        let mut parts = s.trim().splitn(3, '.');
        let major = parts.next().ok_or_else(bad)?;
        let minor = parts.next().ok_or_else(bad)?;
        let minor: String = minor.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u16 = major.parse().map_err(|_| bad())?;
        let minor: u16 = minor.parse().map_err(|_| bad())?;
        Ok(Release { major, minor })
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A `--kernel` value or `uname -r` string that names no profile.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProfileError {
    /// The string does not start with `MAJOR.MINOR`.
    #[error("kernel release `{0}` is not of the form MAJOR.MINOR[.PATCH][-EXTRA] (for example 6.18 or 5.15.0-91-generic)")]
    BadRelease(String),
    /// The release predates SO_REUSEPORT.
    #[error(
        "kernel {0} predates SO_REUSEPORT, which arrived in 3.9; choose a profile from 3.9 on"
    )]
    TooOld(Release),
    /// `auto` needs the running kernel's release.
    #[error("`auto` needs the running kernel's release (uname -r); none was given, so name a profile such as 6.18")]
    AutoWithoutRelease,
    /// A release that is not a profile, where an exact profile was required.
    #[error("no profile named `{name}`; known profiles: {known}")]
    Unknown {
        /// What was asked for.
        name: String,
        /// The profiles there are.
        known: String,
    },
}
