// What a reader needs to notice a restore (design.md, "Store epoch"): the store's epoch, a random id
// made with the store and replaced by `return-address restore`, and an address's last sequence, so a
// reader can tell "nothing yet" from "my cursor is past this queue". Both stores implement it
// (storage/*/…-epoch.ts, migration 0018) and expose it as `epochs`.

export interface EpochStore {
  /** The store's epoch (read once: it changes only by a restore, with the service stopped). */
  epoch(): Promise<string>;
  /** The highest sequence the address ever gave (0: none yet); null when the address does not exist. */
  lastSequence(addressId: string): Promise<number | null>;
}
