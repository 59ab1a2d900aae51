/**
 * Announcer keys and bindings for tests (issue 29): an Ed25519 key pair per announcer, the
 * operator's ANNOUNCER_KEYS_FILE written to a temporary directory, and announcements signed by
 * hand (what a raw publisher, or an attacker with or without a key, sends).
 */
import { createPrivateKey, generateKeyPairSync, randomUUID, type JsonWebKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompactSign } from 'jose';
import { announcerKeysFile } from '../../src/config/checks.js';
import { ANNOUNCEMENT_TYP, ANNOUNCEMENT_VERSION } from '../../src/model/announcement.js';

export interface AnnouncerKey {
  kid: string;
  /** For the announcer (the toolkit's `privateKey`), with its kid. */
  privateJwk: JsonWebKey & { kid: string };
  /** For the registry's binding. */
  publicJwk: JsonWebKey & { kid: string };
}

export function announcerKey(kid = `key-${randomUUID().slice(0, 8)}`): AnnouncerKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    kid,
    privateJwk: { ...privateKey.export({ format: 'jwk' }), kid },
    publicJwk: { ...publicKey.export({ format: 'jwk' }), kid },
  };
}

/** One announcer's binding as ANNOUNCER_KEYS_FILE holds it. */
export interface BindingInput {
  subject: string;
  keys: JsonWebKey[];
  queues: string[];
  scopes?: string[];
  unscopedTools?: boolean;
  shareQueues?: boolean;
}

/** Writes ANNOUNCER_KEYS_FILE; returns its path. */
export function writeBindings(bindings: BindingInput[], dir = mkdtempSync(join(tmpdir(), 'announcers-'))): string {
  const path = join(dir, 'announcers.json');
  writeFileSync(path, JSON.stringify({ announcers: bindings }, null, 2));
  return path;
}

/** The listener's key map, read from a bindings file as the config reads it. */
export function trustedKeys(bindings: BindingInput[]) {
  return announcerKeysFile.parse(writeBindings(bindings));
}

/** What a test signs: the announcement's content, with the fields every message has filled in unless given. */
export interface SignedFields {
  sub: string;
  service: Record<string, unknown>;
  tools?: Record<string, unknown>[];
  instance?: string;
  seq: number;
  iat?: number;
  heartbeatIntervalS?: number;
  goodbye?: boolean;
  [extra: string]: unknown;
}

/** A compact JWS announcement signed with `key` (any private JWK, trusted or not). */
export async function signAnnouncement(
  key: { privateJwk: JsonWebKey; kid: string },
  fields: SignedFields,
  header: { typ?: string; alg?: string } = {},
): Promise<string> {
  const payload = {
    v: ANNOUNCEMENT_VERSION,
    instance: 'test-instance',
    iat: Math.floor(Date.now() / 1000),
    tools: [],
    heartbeatIntervalS: 1,
    goodbye: false,
    ...fields,
  };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: header.alg ?? 'EdDSA', kid: key.kid, typ: header.typ ?? ANNOUNCEMENT_TYP })
    .sign(createPrivateKey({ key: key.privateJwk, format: 'jwk' }));
}
