// What named consumers need from a store (design.md, "Reading without loss"): one durable position per address and
// consumer name. Both stores implement it (storage/*/…-consumers.ts) and expose it as
// `store.consumers`; the rules live in consumers.ts.

export interface ConsumerRecord {
  name: string;
  /** The sequence the consumer confirmed: its reads start after it. */
  cursor: number;
  /** Epoch ms of the last time the position was stored. */
  updatedAt: number;
}

/** Outcome of storing a position: a new name is refused once the address has `maxPerAddress` consumers. */
export type SeekResult = 'stored' | 'too_many' | 'address_gone';

export interface ConsumerPositions {
  /** Stores `cursor` as the consumer's position (creating it), durably, before resolving. */
  seek(addressId: string, name: string, cursor: number, now: number, maxPerAddress: number): Promise<SeekResult>;
  /** The stored position, or null for a name never stored. */
  position(addressId: string, name: string): Promise<number | null>;
  /** The address's consumers by name. */
  list(addressId: string): Promise<ConsumerRecord[]>;
  /** Forgets one consumer; false when there was none of that name. */
  remove(addressId: string, name: string): Promise<boolean>;
}
