// `return-address rotate`: replaces a leaked inbox secret, read token or both (design.md,
// "Credential rotation"; POST …/rotate) and writes the new ones into the saved file, which is the
// only place they are kept: like `create --save`, no credential reaches stdout.
import { ReturnAddress } from '@return-address/client';
import { type Saved, savedUrl, writeSaved } from './saved-file.js';
import type { CliVerb } from './verb.js';

export const rotateVerb: CliVerb = {
  summary: 'replace a leaked inbox secret or read token; FILE gets the new ones',
  help: `Usage: return-address rotate --save FILE [--inbox-secret] [--read-token]

Replaces the inbox secret (the inbox URL and capture URL change), the read token, or both; at least
one flag is needed. The old credential is refused from the answer on, on every instance; the
address, its email address, its queue and its signing secrets stay. FILE is rewritten (0600) with
the new credentials and prints {address, rotated, saved_to}: no credential reaches stdout. Give the
new hook_url or inbox_url to your senders: jq -r .endpoints.hook_url FILE. A stream or long-poll
opened before the rotation runs on until it ends; restart it.

  --save FILE    the file \`create --save\` wrote
  --url URL      service base URL (default: the one saved in FILE, else $RETURN_ADDRESS_URL, else http://localhost:3000)
`,
  async run(args, kit) {
    const { values } = kit.parse(args, { 'inbox-secret': { type: 'boolean' }, 'read-token': { type: 'boolean' } });
    const inboxSecret = values['inbox-secret'] === true;
    const readToken = values['read-token'] === true;
    if (!inboxSecret && !readToken) throw kit.usage('give --inbox-secret, --read-token or both: what to replace');
    const file = values.save as string;
    const saved = kit.loadSaved(file) as Saved;
    const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
    const r = await ra.rotate({ inboxSecret, readToken });
    const next: Saved = {
      ...saved,
      credentials: { ...saved.credentials, ...(r.credentials.read_token === undefined ? {} : { read_token: r.credentials.read_token }) },
      endpoints: {
        ...saved.endpoints,
        ...(r.endpoints.inbox_url === undefined ? {} : { inbox_url: r.endpoints.inbox_url }),
        ...(r.endpoints.hook_url === undefined ? {} : { hook_url: r.endpoints.hook_url }),
      },
    };
    try {
      writeSaved(file, next);
    } catch (err) {
      // The old credentials are dead already: the new ones must not be lost with the file.
      process.stderr.write(`return-address: could not write ${file} (${(err as Error).message}); the new credentials follow on stdout, keep them\n`);
      kit.out(r);
      return 1;
    }
    kit.out({ address: r.address, rotated: [...(inboxSecret ? ['inbox_secret'] : []), ...(readToken ? ['read_token'] : [])], saved_to: file });
    return 0;
  },
};
