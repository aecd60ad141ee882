// The file `return-address create --save FILE` writes (design.md, "Agent toolkit and live view"): the create response
// exactly as returned, plus `cursor` (the position the CLI's reads start after) and `url` (the
// service that holds the address, so a fresh shell needs no flag or variable), `epoch` (the store
// epoch of that cursor) and `handled` (consume's last handled event ids; saved-epoch.ts). The Python
// client reads and writes the same format. It holds the read token and the inbox secret: mode 0600.
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { type CreateAddressResponse, DEFAULT_URL } from '@return-address/client';

export type Saved = CreateAddressResponse & {
  cursor: number;
  url?: string;
  /** The store epoch the cursor belongs to (design.md, "Store epoch"): a read that sees another one starts again from 0. */
  epoch?: string;
  /** The last event ids consume handled (at most SAVED_HANDLED_IDS): skipped when a new epoch makes it read again. */
  handled?: string[];
};

export class SavedFileError extends Error {}

export function loadSaved(file: string | undefined): Saved {
  if (!file) throw new SavedFileError('--save FILE is required (the file `return-address create --save FILE` wrote)');
  let saved: Saved;
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as Saved;
  } catch (err) {
    throw new SavedFileError(`cannot read ${file}: ${(err as Error).message}`);
  }
  if (!saved?.address?.id || !saved.credentials?.read_token) throw new SavedFileError(`${file} is not a saved create response`);
  if (typeof saved.cursor !== 'number') saved.cursor = 0;
  return saved;
}

/**
 * Write-then-rename, so a crash never leaves a half-written file with the only copy of the token.
 * The temporary name is unpredictable and created exclusively (O_EXCL, mode 0600): with a name
 * derived from the pid, another local user could plant a symlink or a readable file there first.
 */
export function writeSaved(file: string, saved: Saved): void {
  const tmp = `${file}.${randomBytes(12).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeFileSync(fd, `${JSON.stringify(saved, null, 2)}\n`);
    fchmodSync(fd, 0o600);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, file);
}

/**
 * The service to talk to: --url, else the saved file's (the service that holds the address), else
 * RETURN_ADDRESS_URL, else http://localhost:3000.
 */
export function savedUrl(flag: string | undefined, saved: Saved | undefined): string {
  return (flag ?? saved?.url ?? process.env.RETURN_ADDRESS_URL ?? DEFAULT_URL).replace(/\/+$/, '');
}
