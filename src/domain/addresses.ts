// Addresses (design.md, "Identifiers and secrets", "Create address and its rate limit", "Errors"):
// creating one under the per-client window, finding one while it is usable (not past its grace
// period), the bearer and inbox-secret checks in the order of checks, and deleting one. A part of
// ReturnAddressService, which every way in speaks to.
import { bearerToken, WRONG_TOKEN } from './bearer-token.js';
import { ADDRESS_ID_RE, hashSecret, newAddressId, newInboxSecret, newReadToken, newSlug, secretMatches } from './credentials.js';
import { ApiError, INBOX_NOT_FOUND, notFound, unauthorized } from './errors.js';
import type { AddressRecord } from './model.js';
import type { Store, WakeupHub } from './ports.js';
import { newSigningKeys } from './signing-keys.js';

export interface AddressOptions {
  defaultTtlSeconds: number;
  expiredGraceSeconds: number;
  createRateLimit: number;
  createRateWindowSeconds: number;
  /** MAX_TTL_SECONDS: a create asking for a longer expires_in_seconds is refused naming the cap. */
  maxTtlSeconds?: number | undefined;
}

export interface CreateAddressInput {
  name?: string;
  task_id?: string;
  expires_in_seconds?: number;
}

export interface CreatedAddress {
  address: AddressRecord;
  readToken: string;
  inboxSecret: string;
}

export const DEFAULT_ADDRESS_NAME = 'untitled';

export class Addresses {
  constructor(
    private readonly store: Store,
    private readonly hub: WakeupHub,
    private readonly opts: AddressOptions,
    private readonly now: () => number,
  ) {}

  async createAddress(input: CreateAddressInput, clientKey: string): Promise<CreatedAddress> {
    const createdAt = this.now();
    const cap = this.opts.maxTtlSeconds;
    if (cap !== undefined && input.expires_in_seconds !== undefined && input.expires_in_seconds > cap) {
      throw new ApiError(
        'invalid_request',
        `expires_in_seconds must be at most ${cap} on this instance (MAX_TTL_SECONDS = ${cap}); ` +
          `got ${input.expires_in_seconds}. Ask for ${cap} or less, or omit it for the default of ${this.opts.defaultTtlSeconds} s.`,
      );
    }
    const ttl = input.expires_in_seconds ?? this.opts.defaultTtlSeconds;
    const readToken = newReadToken();
    const inboxSecret = newInboxSecret();
    const id = newAddressId();
    const address: AddressRecord = {
      id,
      slug: newSlug(),
      name: input.name ?? DEFAULT_ADDRESS_NAME,
      taskId: input.task_id ?? null,
      readTokenHash: hashSecret(readToken),
      inboxSecretHash: hashSecret(inboxSecret),
      signingKeys: newSigningKeys(id, readToken, inboxSecret),
      createdAt,
      expiresAt: createdAt + ttl * 1000,
      // The creating client's IP, plain (the operator's `admin list` shows it to act on abuse); it
      // goes with the address.
      createdIp: clientKey,
    };
    const decision = await this.store.createAddress(address, {
      key: `create:${clientKey}`,
      limit: this.opts.createRateLimit,
      windowMs: this.opts.createRateWindowSeconds * 1000,
      now: createdAt,
    });
    if (!decision.allowed) {
      throw new ApiError('rate_limited', `Too many addresses created from this client; retry in ${decision.retryAfterSeconds} s.`, {
        'retry-after': String(decision.retryAfterSeconds),
      });
    }
    return { address, readToken, inboxSecret };
  }

  /** The address if it exists and is not past its grace period (then it is as good as swept). */
  async findAddress(addressId: string): Promise<AddressRecord | null> {
    if (!ADDRESS_ID_RE.test(addressId)) return null;
    return this.usable(await this.store.getAddress(addressId));
  }

  /** The address by the local part of its email (slug), for the SMTP listener. */
  async findAddressBySlug(slug: string): Promise<AddressRecord | null> {
    return this.usable(await this.store.getAddressBySlug(slug));
  }

  /**
   * Checks a bearer credential in the order of design.md, "Errors": a well-formed bearer (else 401),
   * then an existing address (else 404), then the token of that address (else 401).
   */
  async authenticate(addressId: string, authorization: string | undefined): Promise<AddressRecord> {
    const token = bearerToken(authorization);
    return this.checkReadToken(await this.findAddress(addressId), token);
  }

  /**
   * `authenticate` without waiting, when the store holds the address in memory (a queue being read
   * is): the address, or undefined when only `authenticate` can tell. Throws what it would throw.
   * Reading a page skips two promise hops this way (bench/README.md, "The same-turn authentication").
   */
  authenticateNow(addressId: string, authorization: string | undefined): AddressRecord | undefined {
    const token = bearerToken(authorization);
    if (!ADDRESS_ID_RE.test(addressId)) throw notFound('Address');
    const held = this.store.heldAddress?.(addressId);
    return held === undefined ? undefined : this.checkReadToken(this.usable(held), token);
  }

  /** `address` is a usable one (from findAddress or usable), or null: 404. */
  private checkReadToken(address: AddressRecord | null, token: string): AddressRecord {
    if (!address) throw notFound('Address');
    if (!secretMatches(token, address.readTokenHash)) throw unauthorized(WRONG_TOKEN);
    return address;
  }

  async deleteAddress(address: AddressRecord): Promise<void> {
    const existed = await this.store.deleteAddress(address.id);
    if (!existed) throw notFound('Address');
    this.hub.notify(address.id);
  }

  /**
   * The inbox URL's credential (POST /api/v1/inbox/{id}/{secret}): the address whose inbox secret this is, else 404. Checked before the
   * body or any header is looked at, so someone without the secret learns nothing from validation
   * and cannot make the service parse a body.
   */
  async openInbox(addressId: string, secret: string): Promise<AddressRecord> {
    return this.checkInboxSecret(await this.findAddress(addressId), secret);
  }

  /** `openInbox` without waiting when the store holds the address in memory; undefined when only `openInbox` can tell. */
  openInboxNow(addressId: string, secret: string): AddressRecord | undefined {
    if (!ADDRESS_ID_RE.test(addressId)) throw new ApiError('not_found', INBOX_NOT_FOUND);
    const held = this.store.heldAddress?.(addressId);
    return held === undefined ? undefined : this.checkInboxSecret(this.usable(held), secret);
  }

  private checkInboxSecret(address: AddressRecord | null, secret: string): AddressRecord {
    // One answer for an unknown address and a wrong secret, so neither can be probed.
    if (!address || !secretMatches(secret, address.inboxSecretHash)) throw new ApiError('not_found', INBOX_NOT_FOUND);
    return address;
  }

  /** The address, unless it is past its grace period (then it is as good as swept). */
  private usable(a: AddressRecord | null): AddressRecord | null {
    return a && !this.isPastGrace(a) ? a : null;
  }

  private isPastGrace(a: AddressRecord): boolean {
    return this.now() >= a.expiresAt + this.opts.expiredGraceSeconds * 1000;
  }
}
