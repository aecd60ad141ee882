// The STARTTLS certificate and key (SMTP_TLS_CERT, SMTP_TLS_KEY), read and checked as a pair: at
// start, and again on SIGHUP after a renewal (certbot, acme.sh) replaced the files, so a new
// certificate takes effect without a restart and without dropping the listener. A pair that does
// not load (unreadable, not PEM, key not matching the certificate) fails the start, or, on a
// reload, is refused with an error while the certificate in use stays.

import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

export interface SmtpCertificates {
  cert: Buffer;
  key: Buffer;
  /** What the log says about it: subject, expiry, SHA-256 fingerprint (nothing secret). */
  summary: { subject: string; valid_to: string; fingerprint256: string };
}

function readPem(path: string, variable: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${variable}: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

export function loadSmtpCertificates(certFile: string, keyFile: string): SmtpCertificates {
  const cert = readPem(certFile, 'SMTP_TLS_CERT');
  const key = readPem(keyFile, 'SMTP_TLS_KEY');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`SMTP_TLS_CERT: ${certFile} is not a PEM certificate: ${(err as Error).message}`, { cause: err });
  }
  try {
    createSecureContext({ cert, key }); // the same check a STARTTLS handshake would make, now
  } catch (err) {
    throw new Error(`SMTP_TLS_KEY: ${keyFile} does not load with ${certFile}: ${(err as Error).message}`, { cause: err });
  }
  return { cert, key, summary: { subject: x509.subject.replace(/\n/g, ', '), valid_to: x509.validTo, fingerprint256: x509.fingerprint256 } };
}
