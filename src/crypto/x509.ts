// Signing an X.509 certificate that node-forge built, with node:crypto's RSA. forge's own `cert.sign` computes the RSA
// signature with its pure-JavaScript big numbers, which choose their slowest multiplication on Node 21 and later (a
// global `navigator` exists there, and forge's jsbn reads it as a browser): about 0.3 s a signature on the event loop,
// and 30 times that inside Jest's module sandbox on Node 24. OpenSSL signs in about a millisecond. forge still encodes
// the certificate (the TBSCertificate and the PEM): this does what its `cert.sign(key, sha256)` does around the RSA step.
import { createPrivateKey, type KeyObject, sign } from "node:crypto";
import forge from "node-forge";

/** Signs `cert` (sha256WithRSAEncryption) with `key`: a KeyObject, or a private key in PEM. */
export function signCertificate(cert: forge.pki.Certificate, key: KeyObject | string): void {
  const oid = forge.pki.oids.sha256WithRSAEncryption as string;
  cert.signatureOid = oid;
  cert.siginfo.algorithmOid = oid;
  cert.md = forge.md.sha256.create();
  // getTBSCertificate is public in forge (x509.js) but missing from its type declarations.
  const tbs = (forge.pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 }).getTBSCertificate(cert);
  cert.tbsCertificate = tbs;
  const der = Buffer.from(forge.asn1.toDer(tbs).getBytes(), "binary");
  const privateKey = typeof key === "string" ? createPrivateKey(key) : key;
  cert.signature = sign("sha256", der, privateKey).toString("binary");
}
