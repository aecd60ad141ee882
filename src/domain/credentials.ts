// Identifiers and secrets (design.md, "Identifiers and secrets"). Ids and slugs are random, never sequential (event ids
// carry their creation time inside, see newEventId); read tokens and inbox secrets are 32 random
// bytes, handed out once and stored only as SHA-256 hashes, so a copy of the database lets nobody
// read or write a queue.
import { hash, randomBytes } from 'node:crypto';

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

// Ids are drawn on every delivery: one 4 KiB read of the CSPRNG serves ~80 of them instead of one
// call each (bench/README.md, "Measurements behind small choices"). Every byte is used once.
let pool = Buffer.alloc(0);
let poolOffset = 0;
function nextRandomByte(): number {
  if (poolOffset === pool.length) {
    pool = randomBytes(4096);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** `n` characters drawn uniformly from `alphabet` (rejection sampling, so no modulo bias). */
function randomString(alphabet: string, n: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < n) {
    const b = nextRandomByte();
    if (b < limit) out += alphabet[b % alphabet.length];
  }
  return out;
}

export const ADDRESS_ID_RE = /^addr_[0-9a-z]{26}$/;
export const EVENT_ID_RE = /^evt_[0-9a-z]{26}$/;
export const SLUG_RE = /^[a-z][a-z0-9]{11}$/;
export const READ_TOKEN_RE = /^aa_read_[A-Za-z0-9_-]{43}$/;
export const INBOX_SECRET_RE = /^aa_ingress_[A-Za-z0-9_-]{43}$/;

export const newAddressId = () => `addr_${randomString(BASE36, 26)}`;
/**
 * Event ids: `evt_` + 5 random + 9 time + 12 random base36 characters, the time being the creation
 * time in epoch ms (36^9 ms reach the year 5188). The 17 random characters (~88 bits) keep ids
 * made in the same millisecond apart, and the random head makes ids look unrelated to each other,
 * even consecutive ones. The stores index ids by their time part first (`EVENT_ID_TIME_SQL` in
 * storage/rows.ts), so that index grows at one end: with an index on fully random ids, every
 * insert dirtied a leaf page of its own and a batch of deliveries wrote hundreds of index pages,
 * which made SQLite's insert about twice as costly (bench/README.md, "Measurements behind small choices").
 */
const EVENT_ID_HEAD = 5;
const EVENT_ID_TIME_DIGITS = 9;
export const newEventId = (createdAt = Date.now()) =>
  `evt_${randomString(BASE36, EVENT_ID_HEAD)}${createdAt.toString(36).padStart(EVENT_ID_TIME_DIGITS, '0')}` +
  randomString(BASE36, 26 - EVENT_ID_HEAD - EVENT_ID_TIME_DIGITS);

export const newSlug = () => randomString(LETTERS, 1) + randomString(BASE36, 11);
export const newReadToken = () => `aa_read_${randomBytes(32).toString('base64url')}`;
export const newInboxSecret = () => `aa_ingress_${randomBytes(32).toString('base64url')}`;

// The one-shot `hash` skips the Hash object that createHash builds; every delivery checks a secret,
// and the object's construction cost more than the digest itself (bench/README.md, "Measurements behind small choices").
export const hashSecret = (secret: string): Buffer => hash('sha256', secret, 'buffer');

/**
 * The last presented secret that matched each stored hash, kept as long as the hash itself: the
 * hash is a field of an address row the store holds in memory (SqliteReadCache), so the entry goes
 * when the row does (deleted, swept, evicted). A delivery or read that presents the same secret as
 * the last one is then compared in constant time without taking a SHA-256 of it, the largest single
 * cost of a delivery after storage (bench/README.md, "Where each µs of a delivery goes"). The
 * process already holds every secret it checks while it checks it; this keeps one per held row, and
 * the database still stores only hashes (design.md, "Identifiers and secrets").
 */
const lastMatch = new WeakMap<Buffer, string>();

/**
 * Constant-time check of a presented secret against a stored hash. It runs on every delivery and
 * every read. On a miss the digest is taken as hex and compared with the stored bytes' hex: a Buffer
 * digest is a new ArrayBuffer per call, whose GC and allocation cost more than the hashing itself
 * (bench/README.md, "Measurements behind small choices").
 */
export function secretMatches(presented: string, storedHash: Buffer): boolean {
  const known = lastMatch.get(storedHash);
  if (known !== undefined && equalInConstantTime(presented, known)) return true;
  const matches = equalInConstantTime(hash('sha256', presented, 'hex'), storedHash.toString('hex'));
  if (matches) lastMatch.set(storedHash, presented);
  return matches;
}

/** Compares every character whatever the first difference, so the time tells nothing of where it is. */
function equalInConstantTime(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  // Past the end of b, charCodeAt is NaN, which XORs as 0: the length difference is already in diff.
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * What names a read token between instances once it is rotated away (design.md, "Credential
 * rotation"): the first 16 bytes of its SHA-256, in hex. 128 bits never collide among live tokens,
 * and a prefix of a hash of a dead random token tells nobody anything.
 */
export const tokenIdentity = (readTokenHash: Buffer): string => readTokenHash.toString('hex', 0, 16);
export const TOKEN_IDENTITY_RE = /^[0-9a-f]{32}$/;
