// The named consumer that keeps one forward target's position (design.md, "Forwarding to a local handler": `forward:<target>`).
// Consumer names are [a-z0-9_.:-]{1,64} (§14) and a URL is not, so the target's host, port and path
// are written in those characters; the same URL always gives the same name, so a restart resumes.
import { createHash } from 'node:crypto';

const MAX_NAME = 64;
const PREFIX = 'forward:';

export function forwardConsumerName(target: URL): string {
  const port = target.port === '' ? '' : `:${target.port}`;
  const path = target.pathname === '/' ? '' : target.pathname;
  const readable = `${target.hostname}${port}${path}${target.search}`
    .toLowerCase()
    .replace(/[^a-z0-9_.:-]+/g, '-')
    .replace(/-+$/, '');
  const name = PREFIX + readable;
  if (name.length <= MAX_NAME) return name;
  // Too long to keep whole: a prefix a person recognises, and a hash that keeps two targets apart.
  const hash = createHash('sha256').update(target.href).digest('hex').slice(0, 12);
  return `${name.slice(0, MAX_NAME - hash.length - 1)}-${hash}`;
}
