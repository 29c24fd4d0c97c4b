//! A throwaway certificate authority and the certificates it issues, as PEM files in a scratch
//! directory: what an operator's private CA gives the admin and the executors.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SerialNumber};
use rustls::pki_types::CertificateDer;
use std::path::{Path, PathBuf};

/// A certificate authority made for one test.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

/// A certificate's files and its DER (to compare with what a server presents).
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub der: CertificateDer<'static>,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "Chime test CA");
        let cert = params.self_signed(&key).unwrap();
        TestCa { cert, key }
    }

    /// Writes the CA's certificate to `dir/ca.pem`.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.cert.pem()).unwrap();
        path
    }

    /// A certificate for `localhost` and 127.0.0.1 numbered `serial`, written to
    /// `dir/<name>.pem` and `dir/<name>.key` (over what is there).
    pub fn issue(&self, dir: &Path, name: &str, serial: u64) -> Issued {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params.serial_number = Some(SerialNumber::from(serial));
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} {serial}"));
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let issued = Issued {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
            der: cert.der().clone(),
        };
        std::fs::write(&issued.cert, cert.pem()).unwrap();
        std::fs::write(&issued.key, key.serialize_pem()).unwrap();
        issued
    }
}
