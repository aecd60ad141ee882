// What comes with a page of events besides its events: the store epoch and last sequence of its
// headers, and each event's own JSON text.

import { elementTexts, memberTexts, rememberSource, sourceOf } from './json-source.js';
import type { EventPage } from './types.js';

/** What the headers of a page said: the store's epoch and the address's last sequence (absent from an older service). */
export interface PageEpoch {
  epoch: string;
  lastSequence: number;
}
const pageEpochs = new WeakMap<object, PageEpoch>();

/**
 * The store epoch and the address's last sequence that came with a page (Return-Address-Epoch and
 * Return-Address-Last-Sequence); undefined from a service that does not send them. A new epoch
 * means the service was restored from a backup: sequences may be given again to new events.
 */
export function pageEpoch(page: EventPage): PageEpoch | undefined {
  return pageEpochs.get(page);
}

/** Remembers the epoch headers that came with `page`. */
export function setPageEpoch(page: EventPage, seen: PageEpoch): void {
  pageEpochs.set(page, seen);
}

/** Each event of a page remembers its own JSON text, so the CLI prints its numbers as the service sent them. */
export function rememberEventSources(page: EventPage): EventPage {
  const text = sourceOf(page);
  const events = text === undefined ? undefined : memberTexts(text).get('events');
  if (events !== undefined) {
    const texts = elementTexts(events);
    for (let i = 0; i < texts.length; i++) rememberSource(page.events[i], texts[i]!);
  }
  return page;
}
