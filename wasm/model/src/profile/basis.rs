//! Where a row of the era table was read: which source (a stable tree, a
//! distribution's kernel source package, a mainline release, a measurement,
//! an inference), its version, and what qualifies the reading.
//!
//! Data, not sentences: the sentence tables `messages/en.json` and
//! `messages/zh-CN.json` say these values (the keys `era_basis.*`,
//! `basis_tree.*`, `basis_qualifier.*`; see [`crate::message`]), and their
//! TypeScript declarations go to `src/model/generated/message/` with the
//! other message types. The trees are those of
//! `shared/reference/kernel-history.md` §0.1.

use serde::Serialize;

use super::Release;

/// Where the rules of one profile were read: a source, and what qualifies
/// it when something does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EraBasis {
    /// The source, as read.
    AsRead {
        /// The source.
        tree: BasisTree,
    },
    /// The source, with a qualifier.
    Qualified {
        /// The source.
        tree: BasisTree,
        /// What qualifies it.
        qualifier: BasisQualifier,
    },
}

/// Which source a profile's rules come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum BasisTree {
    /// A stable release's full tree (a copy of kernel.org's `3.9.6`).
    Stable {
        /// Its version (`3.9.6`).
        version: &'static str,
    },
    /// Ubuntu's `linux-source` package.
    Ubuntu {
        /// The package's version, without the ABI suffix (`4.4.0-210`).
        package: &'static str,
        /// The kernel version its Makefile gives (`4.4.262`).
        upstream: &'static str,
    },
    /// Debian's `linux-source` package.
    Debian {
        /// The kernel version (`6.1.192`).
        version: &'static str,
    },
    /// A mainline release, from its commits and pull requests.
    Mainline {
        /// The release.
        release: Release,
    },
    /// The running kernel of this project's machine, measured by the agent.
    Measured {
        /// Its `uname -r` version (`6.18.44`).
        version: &'static str,
    },
    /// No tree of the series: inferred from the trees of the rows on either
    /// side and the commits between them.
    Inferred {
        /// The older tree's series.
        before: Release,
        /// The newer tree's series.
        after: Release,
    },
}

/// What qualifies a [`BasisTree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum BasisQualifier {
    /// The rules read are unchanged since an older release (4.17.0's, with
    /// lhash2, are 4.16's).
    UnchangedSince {
        /// The release they first appear in.
        release: Release,
    },
    /// No tree of this series was read (4.19 is the 4.18 tree with the
    /// 4.19 programs; 5.15 is mainline).
    NoTreeRead {
        /// The series.
        release: Release,
    },
    /// The distribution tree carries its own backport of a commit that the
    /// row leaves out (Ubuntu 5.0 and acdcecc61285).
    WithoutBackport {
        /// The commit, abbreviated.
        commit: &'static str,
    },
    /// The commit the row's change follows.
    Commit {
        /// The commit, abbreviated.
        commit: &'static str,
    },
    /// The series that brought request migration and the closed tail to
    /// 5.14 ("Socket migration for SO_REUSEPORT", from f9ac779f881c).
    RequestMigrationSeries,
}

impl BasisTree {
    /// [`BasisTree::Stable`].
    pub const fn stable(version: &'static str) -> Self {
        BasisTree::Stable { version }
    }

    /// [`BasisTree::Ubuntu`].
    pub const fn ubuntu(package: &'static str, upstream: &'static str) -> Self {
        BasisTree::Ubuntu { package, upstream }
    }

    /// [`BasisTree::Debian`].
    pub const fn debian(version: &'static str) -> Self {
        BasisTree::Debian { version }
    }

    /// [`BasisTree::Mainline`].
    pub const fn mainline(major: u16, minor: u16) -> Self {
        BasisTree::Mainline {
            release: Release::new(major, minor),
        }
    }

    /// [`BasisTree::Inferred`] from the trees of two series.
    pub const fn inferred(before: Release, after: Release) -> Self {
        BasisTree::Inferred { before, after }
    }

    /// [`BasisTree::Measured`].
    pub const fn measured(version: &'static str) -> Self {
        BasisTree::Measured { version }
    }

    /// This source, as read.
    pub const fn as_read(self) -> EraBasis {
        EraBasis::AsRead { tree: self }
    }

    /// This source, with a qualifier.
    pub const fn with(self, qualifier: BasisQualifier) -> EraBasis {
        EraBasis::Qualified {
            tree: self,
            qualifier,
        }
    }
}

impl BasisQualifier {
    /// [`BasisQualifier::UnchangedSince`].
    pub const fn unchanged_since(major: u16, minor: u16) -> Self {
        BasisQualifier::UnchangedSince {
            release: Release::new(major, minor),
        }
    }

    /// [`BasisQualifier::NoTreeRead`].
    pub const fn no_tree_read(major: u16, minor: u16) -> Self {
        BasisQualifier::NoTreeRead {
            release: Release::new(major, minor),
        }
    }

    /// [`BasisQualifier::WithoutBackport`].
    pub const fn without_backport(commit: &'static str) -> Self {
        BasisQualifier::WithoutBackport { commit }
    }

    /// [`BasisQualifier::Commit`].
    pub const fn commit(commit: &'static str) -> Self {
        BasisQualifier::Commit { commit }
    }
}

impl EraBasis {
    /// The source.
    pub const fn tree(&self) -> BasisTree {
        match *self {
            EraBasis::AsRead { tree } | EraBasis::Qualified { tree, .. } => tree,
        }
    }

    /// The qualifier, if any.
    pub const fn qualifier(&self) -> Option<BasisQualifier> {
        match *self {
            EraBasis::AsRead { .. } => None,
            EraBasis::Qualified { qualifier, .. } => Some(qualifier),
        }
    }
}
