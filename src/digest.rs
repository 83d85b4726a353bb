//! The one hashing helper: SHA-256 as lower-case hex, for names that must not reveal what they
//! name (cache keys, the file names of the OIDC caches) and for fingerprints of secrets and CA
//! bundles inside the cache key.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes` (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    // A table rather than `write!("{:02x}")` per byte: this runs on every cache hit (the cache
    // key), and the formatting machinery cost more than the hash itself.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_answer() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
