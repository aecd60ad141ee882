// `return-address subscribe`: webhook subscriptions from the shell (design.md, "Push subscriptions";
// POST/GET/DELETE …/subscriptions, POST …/{id}/resume), so an agent host can ask to be called
// without a hand-written curl.
import { ReturnAddress, type SubscriptionRequest } from '@return-address/client';
import { savedUrl } from './saved-file.js';
import type { CliVerb } from './verb.js';

export const subscribeVerb: CliVerb = {
  summary: 'push events to a URL (webhook subscriptions): create, list, resume, delete',
  help: `Usage: return-address subscribe --save FILE URL [--type T]... [--match PATH=VALUE]... [--secret whsec_...]
       [--ttl SECONDS] [--after SEQUENCE] | --list | --show ID | --resume ID | --delete ID

With URL: every matching event is POSTed there, one per request, in order, signed with Standard
Webhooks (webhook-id, webhook-timestamp, webhook-signature); prints the subscription, with the
generated secret when --secret is not given (shown once: keep it). 2xx moves its position (the
consumer push:<id>); anything else is retried (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
10 h), then it is paused until --resume. The URL must be https on a public address unless the
operator set PUSH_ALLOW_PRIVATE=true.

  --save FILE    the file \`create --save\` wrote
  --url URL      service base URL (default: the one saved in FILE, else $RETURN_ADDRESS_URL, else http://localhost:3000)
`,
  async run(args, kit) {
    const { values, positionals } = kit.parse(
      args,
      {
        type: { type: 'string', multiple: true },
        match: { type: 'string', multiple: true },
        secret: { type: 'string' },
        ttl: { type: 'string' },
        after: { type: 'string' },
        list: { type: 'boolean' },
        show: { type: 'string' },
        resume: { type: 'string' },
        delete: { type: 'string' },
      },
      true,
    );
    const target = positionals[0];
    const modes = [target !== undefined, values.list === true, values.show !== undefined, values.resume !== undefined, values.delete !== undefined].filter(
      Boolean,
    ).length;
    if (modes !== 1) throw kit.usage('give one of: URL, --list, --show ID, --resume ID, --delete ID');
    const saved = kit.loadSaved(values.save);
    const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
    if (values.list === true) kit.out({ subscriptions: await ra.subscriptions() });
    else if (values.show !== undefined) kit.out(await ra.subscription(values.show as string));
    else if (values.resume !== undefined) kit.out(await ra.resumeSubscription(values.resume as string));
    else if (values.delete !== undefined) {
      await ra.unsubscribe(values.delete as string);
      kit.out({ deleted: values.delete });
    } else {
      const body: SubscriptionRequest = { url: target as string };
      if (values.type !== undefined) body.type = values.type as string[];
      if (values.match !== undefined) body.match = values.match as string[];
      if (values.secret !== undefined) body.secret = values.secret as string;
      for (const [flag, field] of [
        ['ttl', 'ttl_seconds'],
        ['after', 'after'],
      ] as const) {
        const v = values[flag] as string | undefined;
        if (v === undefined) continue;
        if (!/^\d+$/.test(v)) throw kit.usage(`--${flag}: a whole number`);
        body[field] = Number(v);
      }
      kit.out(await ra.subscribe(body));
    }
    return 0;
  },
};
