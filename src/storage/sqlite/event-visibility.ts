// Which committed events readers may see: an appended event stays invisible until its batch is
// durable, so a reader never sees an event that a power cut could take back (and whose sequence
// could then be reused) (docs/design.md, "Durability: group commit"). Per address, it holds the
// first sequence of each committed, not yet durable batch, in order; reads stop below the oldest,
// so what a reader sees is always a durable prefix.
export class EventVisibility {
  /** Per address, the first sequence of each committed batch that is not durable yet, oldest first. */
  private readonly undurable = new Map<string, number[]>();

  /** Events of the address at or above this sequence are not durable yet: reads stop below it. */
  visibleBelow(addressId: string): number {
    return this.undurable.get(addressId)?.[0] ?? Number.MAX_SAFE_INTEGER;
  }

  /** A batch committed, not durable yet, whose first event for the address has this sequence. */
  hide(addressId: string, firstSequence: number): void {
    const pending = this.undurable.get(addressId);
    if (pending) pending.push(firstSequence);
    else this.undurable.set(addressId, [firstSequence]);
  }

  /** The address's oldest hidden batch is durable (batches become durable in commit order). */
  reveal(addressId: string): void {
    const pending = this.undurable.get(addressId);
    pending?.shift();
    if (pending?.length === 0) this.undurable.delete(addressId);
  }
}
