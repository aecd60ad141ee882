// `return-address signing-secrets`: sets the secrets that check the capture URL's signatures
// (design.md, "Capture URL", PUT …/signing-secrets), so a recipe can wait for trust.verified=true
// without a hand-written curl. The PUT replaces the whole set, so the verb does too, and says so.
// A secret can come from an environment variable instead of the command line, where `ps` and shell
// history would keep it.
import { ReturnAddress, type SigningSecretsBody } from '@return-address/client';
import { SIGNING_SCHEMES, type SigningScheme } from '../domain/signing-schemes.js';
import { savedUrl } from './saved-file.js';
import type { CliVerb } from './verb.js';

/** A scheme's option: its name with a hyphen (--standard-webhooks). */
const flag = (scheme: SigningScheme) => scheme.replace('_', '-');

export const signingSecretsVerb: CliVerb = {
  summary: 'set the secrets that verify signed requests to the capture URL',
  help: `Usage: return-address signing-secrets --save FILE [--github S] [--stripe S] [--slack S]
       [--standard-webhooks S] [--github-env VAR] [--stripe-env VAR] ... | --clear

Sets the secrets that check signatures on requests to hook_url: each captured request that carries
that scheme's signature then has trust.verified true or false (null without a secret), so
\`wait --match trust.ingress=capture --match trust.verified=true\` ignores forged requests (never
match on data.signature: a delivery to the inbox URL can write it).
This REPLACES the address's whole set: a scheme not given is removed (secrets are never returned,
so they cannot be merged). --clear removes them all. --SCHEME-env VAR reads the secret from the
environment variable VAR, which keeps it out of \`ps\` and shell history.
  --github             the GitHub webhook's secret (X-Hub-Signature-256)
  --stripe             the Stripe endpoint's signing secret, whsec_... (Stripe-Signature)
  --slack              the Slack app's Signing Secret (X-Slack-Signature)
  --standard-webhooks  a Standard Webhooks / Svix secret, whsec_... (webhook-signature)
Prints {"configured": [schemes]}.

  --save FILE    the file \`create --save\` wrote
  --url URL      service base URL (default: the one saved in FILE, else $RETURN_ADDRESS_URL, else http://localhost:3000)
`,
  async run(args, kit) {
    const options: Record<string, { type: 'string' } | { type: 'boolean' }> = { clear: { type: 'boolean' } };
    for (const s of SIGNING_SCHEMES.map(flag)) {
      options[s] = { type: 'string' };
      options[`${s}-env`] = { type: 'string' };
    }
    const { values } = kit.parse(args, options);
    const body: SigningSecretsBody = {};
    for (const scheme of SIGNING_SCHEMES) {
      const s = flag(scheme);
      const literal = values[s] as string | undefined;
      const envName = values[`${s}-env`] as string | undefined;
      if (literal !== undefined && envName !== undefined) throw kit.usage(`give --${s} or --${s}-env, not both`);
      if (envName !== undefined) {
        const fromEnv = process.env[envName];
        if (fromEnv === undefined || fromEnv === '') throw kit.usage(`--${s}-env ${envName}: the environment variable ${envName} is not set`);
        body[scheme] = fromEnv;
      } else if (literal !== undefined) body[scheme] = literal;
    }
    if (Object.keys(body).length === 0 && values.clear !== true) {
      throw kit.usage('give at least one secret (--github, --stripe, --slack, --standard-webhooks, or their -env forms), or --clear to remove them all');
    }
    if (Object.keys(body).length > 0 && values.clear === true) throw kit.usage('--clear removes every secret: give it alone');
    const saved = kit.loadSaved(values.save);
    const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
    kit.out(await ra.setSigningSecrets(body));
    return 0;
  },
};
