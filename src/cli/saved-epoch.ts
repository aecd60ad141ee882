// The saved file's cursor belongs to one store epoch (design.md, "Store epoch"). A restore gives the
// store a new epoch and gives sequences after the backup's again, to new events: a saved cursor past
// them would skip those events, and re-reading would run the handled ones twice. So the CLI saves the
// epoch with the cursor; a read that sees another one says so in one line on stderr and reads again
// from the start, and consume skips the event ids it handled, the last SAVED_HANDLED_IDS of them,
// kept in the file across runs (an event handled before that window runs again: at-least-once).
import { type EventPage, pageEpoch } from '@return-address/client';
import type { Saved } from './saved-file.js';

/** How many handled event ids the saved file keeps (about 30 bytes each, the file is rewritten per event). */
export const SAVED_HANDLED_IDS = 1_000;

/** The one line a reader prints when it finds a new epoch. */
export function epochChangedLine(command: string, saved: string, now: string): string {
  return (
    `${command}: the store's epoch changed from ${saved} to ${now} (the service was restored from a backup): ` +
    'reading again from the start of the queue, skipping event ids handled before\n'
  );
}

/**
 * A read of the saved file: `read` after its cursor, or again after 0 when that page says the store's
 * epoch is no longer the saved one (the line goes to stderr). A file from before epochs were saved
 * takes the current one. Returns the page and the epoch to save with a cursor past it.
 */
export async function readSaved(
  saved: Saved,
  command: string,
  read: (after: number) => Promise<EventPage>,
): Promise<{ page: EventPage; epoch: string | undefined; restored: boolean }> {
  const page = await read(saved.cursor);
  const now = pageEpoch(page);
  if (saved.epoch !== undefined && now !== undefined && now.epoch !== saved.epoch) {
    process.stderr.write(epochChangedLine(command, saved.epoch, now.epoch));
    return { page: await read(0), epoch: now.epoch, restored: true };
  }
  return { page, epoch: now?.epoch ?? saved.epoch, restored: false };
}

/** `handled` with `id` added, the oldest dropped past SAVED_HANDLED_IDS. */
export function withHandled(handled: readonly string[] | undefined, id: string): string[] {
  const next = [...(handled ?? []).filter((h) => h !== id), id];
  return next.length > SAVED_HANDLED_IDS ? next.slice(next.length - SAVED_HANDLED_IDS) : next;
}
