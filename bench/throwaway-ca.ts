/**
 * A certificate authority made for one test or bench run with the `openssl` CLI (no package to install):
 * a CA certificate and a server certificate it signed for `localhost` and 127.0.0.1, in a
 * temporary folder that `remove()` deletes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ThrowawayCa {
  /** The CA certificate's PEM file (what OUTBOUND_CA_FILE names). */
  caFile: string;
  /** The server's key and certificate, for https.createServer. */
  key: string;
  cert: string;
  dir: string;
  remove(): void;
}

export function throwawayCa(): ThrowawayCa {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-ca-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=tool-registry test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl(
    'req',
    '-new',
    ...ec,
    '-keyout',
    at('server.key'),
    '-out',
    at('server.csr'),
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    at('server.csr'),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-out',
    at('server.pem'),
    '-days',
    '1',
    '-copy_extensions',
    'copy',
  );
  return {
    caFile: at('ca.pem'),
    key: readFileSync(at('server.key'), 'utf8'),
    cert: readFileSync(at('server.pem'), 'utf8'),
    dir,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
