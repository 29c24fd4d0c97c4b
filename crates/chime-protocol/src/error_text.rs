//! Errors written out with their causes, for logs and messages: the outer text of a client
//! library's error often says little without them (hyper's "client error (Connect)" is
//! "tcp connect error: Connection refused" underneath; an OpenID provider's "Request failed"
//! names the endpoint that failed only in its source). Shared by the admin and the executor
//! SDK, which both describe the failures of their HTTP clients this way.

/// `e`'s text, then each of its causes', separated by `: `.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::fmt;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("request failed")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn causes_follow_the_error() {
        let e = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
        assert_eq!(super::with_causes(&e), "request failed: connection refused");
    }
}
