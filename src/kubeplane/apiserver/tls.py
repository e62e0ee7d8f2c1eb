"""Self-signed serving certificates for ``kubeplane apiserver --tls``.

On first start a CA (``ca.crt``/``ca.key``) and a serving certificate for 127.0.0.1 and localhost signed by it
(``server.crt``/``server.key``) are written to the data directory, keys with mode 0600; later starts reuse them,
so kubeconfigs written before a restart stay valid. The kubeconfig carries the CA as
``certificate-authority-data``, which is how kubectl and the official client verify the server.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=3650)


@dataclass(frozen=True, slots=True)
class ServingCerts:
    ca: Path
    cert: Path
    key: Path


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def ensure_serving_certs(data_dir: Path, *, now: datetime.datetime | None = None) -> ServingCerts:
    certs = ServingCerts(data_dir / "ca.crt", data_dir / "server.crt", data_dir / "server.key")
    if certs.ca.exists() and certs.cert.exists() and certs.key.exists():
        return certs
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubeplane-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubeplane-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    _write(data_dir / "ca.key", _key_pem(ca_key), 0o600)
    _write(certs.key, _key_pem(key), 0o600)
    _write(certs.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(certs.ca, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return certs
