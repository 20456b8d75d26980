//! Kubernetes object-name checks for names that arrive in requests and end up in an API
//! path. kube-rs puts a name into the URL as given (`x?dryRun=All` would become a query
//! string, `../x` another path), so a name from a request must pass these before it reaches
//! an [`kube::Api`] call.

use adze_api::patterns::is_dns1123_label;

/// Longest DNS-1123 label (namespaces).
pub const MAX_LABEL: usize = 63;
/// Longest DNS-1123 subdomain (pod and node names).
pub const MAX_SUBDOMAIN: usize = 253;

/// Why a name is not a valid Kubernetes object name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("is empty")]
    Empty,
    #[error("is {0} characters long; at most {1} are allowed")]
    TooLong(usize, usize),
    #[error(
        "is not a DNS-1123 {0}: lower-case letters, digits and '-' (and '.' between labels in a subdomain), starting and ending with a letter or digit"
    )]
    Invalid(&'static str),
}

/// A DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters), as
/// Kubernetes requires of a namespace.
pub fn dns1123_label(s: &str) -> Result<(), NameError> {
    check_len(s, MAX_LABEL)?;
    if is_dns1123_label(s) {
        Ok(())
    } else {
        Err(NameError::Invalid("label"))
    }
}

/// A DNS-1123 subdomain (labels joined by '.', at most 253 characters in all), as
/// Kubernetes requires of pod and node names.
pub fn dns1123_subdomain(s: &str) -> Result<(), NameError> {
    check_len(s, MAX_SUBDOMAIN)?;
    if s.split('.').all(is_dns1123_label) {
        Ok(())
    } else {
        Err(NameError::Invalid("subdomain"))
    }
}

fn check_len(s: &str, max: usize) -> Result<(), NameError> {
    match s.len() {
        0 => Err(NameError::Empty),
        n if n > max => Err(NameError::TooLong(n, max)),
        _ => Ok(()),
    }
}

/// `s` quoted for an error message, cut to 80 characters so a hostile name cannot flood
/// the log.
pub fn quoted(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_names_pass_and_path_tricks_do_not() {
        for ok in [
            "a",
            "a-0",
            "ip-10-0-1-2.ec2.internal",
            "0x",
            &"a".repeat(253),
        ] {
            assert_eq!(dns1123_subdomain(ok), Ok(()), "{ok}");
        }
        for bad in [
            "x?dryRun=All",
            "../x",
            "A",
            "a/b",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a b",
        ] {
            assert_eq!(
                dns1123_subdomain(bad),
                Err(NameError::Invalid("subdomain")),
                "{bad}"
            );
        }
        assert_eq!(dns1123_subdomain(""), Err(NameError::Empty));
        assert_eq!(
            dns1123_subdomain(&"a".repeat(254)),
            Err(NameError::TooLong(254, 253))
        );
        assert_eq!(dns1123_label("kube-system"), Ok(()));
        assert_eq!(dns1123_label("a.b"), Err(NameError::Invalid("label")));
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            Err(NameError::TooLong(64, 63))
        );
        assert_eq!(dns1123_label(&"a".repeat(63)), Ok(()));
    }

    #[test]
    fn quoted_cuts_long_names() {
        assert_eq!(quoted("a\"b"), r#""a\"b""#);
        assert_eq!(quoted(&"é".repeat(100)), format!("{:?}...", "é".repeat(80)));
    }
}
