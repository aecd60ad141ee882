// `return-address policy`: reads, sets or removes the address's sender policy (design.md, "Sender
// policy and quarantine"; PUT/GET/DELETE …/sender-policy), and releases a quarantined event, so an
// agent can lock its address to the senders it expects without a hand-written curl.
import { ReturnAddress, type SenderPolicy } from '@return-address/client';
import { savedUrl } from './saved-file.js';
import type { CliVerb } from './verb.js';

export const senderPolicyVerb: CliVerb = {
  summary: "read, set or remove the address's sender policy; release a quarantined event",
  help: `Usage: return-address policy --save FILE [--allow DOMAIN_OR_ADDRESS]... [--require dmarc|dkim|none]
       [--require-signature] | --json POLICY | --delete | --release EVENT_ID

Without options, prints {"sender_policy", "updated_at"} (sender_policy null when none is set).
--allow (repeatable) and --require set the mail rule: only mail From an allowed domain or address,
proven by the required authentication aligned to it (default dmarc), counts; --require-signature
sets the capture rule: a captured request counts only when its provider signature verified. A
delivery that fails is still stored, quarantined: default reads, waits, streams, claims and
consumers skip it; \`events --state quarantined\` lists it. The options REPLACE the whole policy.
--json sets the policy from its JSON ({"email": {...}, "capture": {...}}), --delete removes it,
--release EVENT_ID makes a quarantined event readable like any other.

  --save FILE    the file \`create --save\` wrote
  --url URL      service base URL (default: the one saved in FILE, else $RETURN_ADDRESS_URL, else http://localhost:3000)
`,
  async run(args, kit) {
    const { values } = kit.parse(args, {
      allow: { type: 'string', multiple: true },
      require: { type: 'string' },
      'require-signature': { type: 'boolean' },
      json: { type: 'string' },
      delete: { type: 'boolean' },
      release: { type: 'string' },
    });
    const allow = values.allow as string[] | undefined;
    const require = values.require as string | undefined;
    const signature = values['require-signature'] === true;
    const json = values.json as string | undefined;
    const setting = allow !== undefined || require !== undefined || signature;
    const modes = [setting, json !== undefined, values.delete === true, values.release !== undefined].filter(Boolean).length;
    if (modes > 1) throw kit.usage('give one of: --allow/--require/--require-signature, --json, --delete, --release');
    const saved = kit.loadSaved(values.save);
    const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
    if (values.release !== undefined) {
      kit.out(await ra.release(values.release as string));
    } else if (values.delete === true) {
      await ra.deleteSenderPolicy();
      kit.out({ sender_policy: null });
    } else if (json !== undefined) {
      let policy: SenderPolicy;
      try {
        policy = JSON.parse(json) as SenderPolicy;
      } catch {
        throw kit.usage('--json: not valid JSON; give the policy object, e.g. {"email":{"allow":["example.com"]}}');
      }
      kit.out(await ra.setSenderPolicy(policy));
    } else if (setting) {
      const policy: SenderPolicy = {};
      if (allow !== undefined || require !== undefined) {
        policy.email = {};
        if (allow !== undefined) policy.email.allow = allow;
        if (require !== undefined) policy.email.require = require as NonNullable<SenderPolicy['email']>['require'];
      }
      if (signature) policy.capture = { require_signature: true };
      kit.out(await ra.setSenderPolicy(policy));
    } else kit.out(await ra.senderPolicy());
    return 0;
  },
};
