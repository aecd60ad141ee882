// Claims on one address that ask the same thing share the store's "nothing to claim" (design.md,
// "Claims"): a delivery to an address with 1,000 waiting claims wakes all of them, and each once ran
// its own claim statement (1,000 statements per delivery: /healthz unanswered 5 s on PostgreSQL, a
// delivery elsewhere 1.1 s on SQLite). Now the claims of an address with the same filter and cursor
// go in rounds: one claim statement at a time per such group, made by the round's first live member.
// When it leases nothing, every member of the round is answered that same empty batch: each of
// them asked before the statement started (a round is joined only while it gathers), so a change
// after that start wakes them again, exactly as for the shared reads of event-reads.ts. When it
// leases events, they are its alone, and the others gather into the next round. So a delivery
// costs two statements (one that leases the event, one that finds nothing left), whatever the
// number of waiting claims.
import type { ClaimBatch } from './claim-rules.js';

interface Member {
  attempt: () => Promise<ClaimBatch>;
  /** False once the claim's client went away: it never makes a statement, so it leases nothing nobody answers. */
  live: () => boolean;
  resolve: (batch: ClaimBatch) => void;
  reject: (err: unknown) => void;
}

interface Group {
  /** A statement is in flight. */
  running: boolean;
  /** Members of the next round, gathering until it starts. */
  gathering: Member[];
}

export class ClaimRounds {
  private readonly groups = new Map<string, Group>();

  /** `attempt` (one claim statement) as a member of the round for `key` (address, filter and cursor). */
  run(key: string, attempt: () => Promise<ClaimBatch>, live: () => boolean): Promise<ClaimBatch> {
    return new Promise((resolve, reject) => {
      let group = this.groups.get(key);
      if (group === undefined) this.groups.set(key, (group = { running: false, gathering: [] }));
      group.gathering.push({ attempt, live, resolve, reject });
      // The first member of a round starts it in a microtask: the claims asking in this turn join it.
      if (!group.running && group.gathering.length === 1) queueMicrotask(() => this.next(key));
    });
  }

  private next(key: string): void {
    const group = this.groups.get(key);
    if (group === undefined || group.running) return;
    const members = group.gathering;
    group.gathering = [];
    const leaderAt = members.findIndex((m) => m.live());
    if (leaderAt < 0) {
      // Nobody is listening: no statement; each follower of these has ended already.
      for (const m of members) m.resolve({ claims: [], nextChangeAt: null, died: 0 });
      return this.settled(key, group);
    }
    const leader = members[leaderAt]!;
    const others = members.filter((_, i) => i !== leaderAt);
    group.running = true;
    leader.attempt().then(
      (batch) => {
        leader.resolve(batch);
        if (batch.claims.length === 0) {
          for (const m of others) m.resolve({ ...batch, died: 0 });
        } else {
          // What is left may be theirs: they go first in the next round.
          group.gathering = [...others, ...group.gathering];
        }
        group.running = false;
        this.settled(key, group);
      },
      (err: unknown) => {
        // The address is gone, or the store failed: the same answer for every member.
        leader.reject(err);
        for (const m of others) m.reject(err);
        group.running = false;
        this.settled(key, group);
      },
    );
  }

  private settled(key: string, group: Group): void {
    if (group.gathering.length === 0) this.groups.delete(key);
    else queueMicrotask(() => this.next(key));
  }
}
