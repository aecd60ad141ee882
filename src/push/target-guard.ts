// Where a subscription may send (design.md, "Push subscriptions", safety): on a public instance only
// https URLs whose every resolved address is public unicast. Loopback, private, link-local (the
// 169.254.169.254 metadata service), CGNAT (100.64/10), unique-local, multicast, reserved and the
// IPv6 forms that embed such an IPv4 address are refused. The check runs when a subscription is
// created (400, naming the url) and again on every connection, inside the socket's own DNS lookup,
// so a name that later resolves elsewhere (DNS rebinding) is refused before any byte is sent.
// PUSH_ALLOW_PRIVATE=true (tests, a private network) lifts the address rule and allows http.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** A target that may not be contacted: the message says why, never the URL's secret parts. */
export class TargetRefused extends Error {
  override readonly name = 'TargetRefused';
}

/** Resolves a host name to all its addresses (node:dns lookup with all: true; tests give their own). */
export type Resolve = (host: string) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** Only the public unicast range passes; an IPv4-mapped IPv6 address is judged as its IPv4 address. */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  let addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  return addr.range() === 'unicast';
}

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/** The URL's shape: https (http only with allowPrivate), no credentials, a host. Throws TargetRefused. */
export function checkTargetShape(url: URL, allowPrivate: boolean): void {
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw new TargetRefused(allowPrivate ? 'must be an http or https URL' : 'must be an https URL (http only when the operator sets PUSH_ALLOW_PRIVATE=true)');
  }
  if (url.username !== '' || url.password !== '') throw new TargetRefused('must not carry a user name or password; put a token in the path or query');
  if (url.hash !== '') throw new TargetRefused('must not carry a #fragment');
  if (hostOf(url) === '') throw new TargetRefused('must name a host');
}

/** Every address the host resolves to, each checked; throws TargetRefused when one is not public. */
export async function checkTargetAddresses(url: URL, allowPrivate: boolean, resolve: Resolve): Promise<void> {
  if (allowPrivate) return;
  const host = hostOf(url);
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw new TargetRefused(`must resolve to a public address; ${host} is ${rangeOf(host)}`);
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch (err) {
    throw new TargetRefused(`host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'DNS error'})`);
  }
  if (addresses.length === 0) throw new TargetRefused(`host ${host} does not resolve`);
  const bad = addresses.find((a) => !isPublicAddress(a.address));
  if (bad) throw new TargetRefused(`must resolve to public addresses only; ${host} resolves to ${bad.address} (${rangeOf(bad.address)})`);
}

function rangeOf(ip: string): string {
  try {
    return `${ipaddr.process(ip).range()} range`;
  } catch {
    return 'not an address';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for node:http(s) request options: resolves with `resolve` and fails the connection
 * when any address is not public, so the check holds on every connection, not only at creation.
 */
export function guardedLookup(allowPrivate: boolean, resolve: Resolve) {
  return (host: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(host).then(
      (addresses) => {
        const bad = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
        if (bad || addresses.length === 0) {
          const err: NodeJS.ErrnoException = new TargetRefused(
            bad ? `${host} resolves to ${bad.address} (${rangeOf(bad.address)}), not a public address` : `${host} does not resolve`,
          );
          err.code = 'ETARGETREFUSED';
          return callback(err, '');
        }
        if (options.all) return callback(null, addresses);
        const first = addresses[0]!;
        callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}
