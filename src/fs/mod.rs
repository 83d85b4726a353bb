//! The files kubecred writes: the cache's private files and directories (`private_file`), the
//! one atomic replace every write goes through (`atomic_file`), and the user's own files that
//! commands change with a backup, all or none (`file_replace`: kubeconfigs). Nothing here knows
//! what a token or a kubeconfig is.

pub mod atomic_file;
pub mod file_replace;
pub mod private_file;
