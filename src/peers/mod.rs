//! The other plugins kubecred stands in for, read as they read themselves: int128/kubelogin's
//! command lines, its token cache's names and its flags mapped to kubecred's (`kubelogin/`),
//! Azure's kubelogin's command lines and variables (`azure_kubelogin`), and the Go flag syntax
//! both take (`pflag`: cobra's pflag, as Go reads it). Nothing here runs a grant or writes a
//! file: `commands/convert` and the get-token path use what these readers return.

pub mod azure_kubelogin;
pub mod kubelogin;
pub mod pflag;
