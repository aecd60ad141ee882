// `return-address ask "question"`: asks a person through an approval page (design.md, "Approvals").
// The page's URL goes to stderr (send it on through your own channel), the answer's event to
// stdout. Exit 0 when the first option was chosen, 3 for another option, 2 when the approval
// expired, was cancelled, or --timeout passed first, 1 for an error (as every command): a script
// can tell a person's "no" from a failure to ask. main.ts hands it the verbs' kit (verb.ts), so this
// file never imports main.ts.
import { parseArgs } from 'node:util';
import { type ApprovalFieldSpec, ReturnAddress } from '@return-address/client';
import { savedUrl } from './saved-file.js';
import type { VerbKit } from './verb.js';

export const ASK_HELP = `Usage: return-address ask --save FILE "question" [--details TEXT] [--option id=label]...
                          [--field name[!]:type[:label[:choice|choice...]]]... [--expires S] [--timeout S]

Creates an approval on the saved address and prints its page's URL on stderr: send it to the
person through your own channel. Opening the page changes nothing (link scanners are safe); the
person's click records the answer. Waits for the answer's event (approval.decided, or
approval.expired / approval.cancelled, matched on data.approval_id) and prints it as JSON.
The event is left unacknowledged (\`return-address ack --save FILE EVENT_ID\` once acted upon).
  --option id=label   a button (2-5; default approve=Approve deny=Deny); the first one is "yes"
  --field SPEC        an input: name (a trailing ! makes it required), type text|textarea|number|
                      boolean|select, a label, and for select the choices separated by |
  --expires S         the approval's lifetime in seconds (default a day, or the address's rest)
  --timeout S         stop waiting after S seconds (default: until the approval expires)
Exit codes: 0 the first option, 3 another option, 2 expired, cancelled or timed out, 1 an error
(bad usage, the service unreachable or refusing), as for every command.

  --save FILE    the file \`create --save\` wrote (create response + cursor)
  --url URL      service base URL (default $RETURN_ADDRESS_URL, else http://localhost:3000)
  -h, --help     this help
`;

const FIELD_TYPES = ['text', 'textarea', 'number', 'boolean', 'select'] as const;

export function parseFieldSpec(spec: string, usage: VerbKit['usage']): ApprovalFieldSpec {
  const [rawName = '', type = 'text', label, choices] = spec.split(':');
  const required = rawName.endsWith('!');
  const name = required ? rawName.slice(0, -1) : rawName;
  if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name)) throw usage(`--field ${spec}: the name must be a letter then letters, digits or _`);
  if (!(FIELD_TYPES as readonly string[]).includes(type)) throw usage(`--field ${spec}: the type must be one of ${FIELD_TYPES.join(', ')}`);
  return {
    name,
    label: label || name,
    type: type as ApprovalFieldSpec['type'],
    required,
    ...(type === 'select' ? { choices: (choices ?? '').split('|').filter((c) => c !== '') } : {}),
  };
}

const ASK_OPTIONS = {
  url: { type: 'string' },
  save: { type: 'string' },
  details: { type: 'string' },
  option: { type: 'string', multiple: true },
  field: { type: 'string', multiple: true },
  expires: { type: 'string' },
  timeout: { type: 'string' },
} as const;

function parseAsk(args: string[], usage: VerbKit['usage']) {
  try {
    return parseArgs({ args, allowPositionals: true, strict: true, options: ASK_OPTIONS });
  } catch (err) {
    throw usage((err as Error).message);
  }
}

export async function ask(args: string[], { loadSaved, out, usage }: VerbKit): Promise<number> {
  const parsed = parseAsk(args, usage);
  const { values, positionals } = parsed;
  if (positionals.length !== 1 || positionals[0] === '') throw usage('ask takes exactly one question (quote it)');
  const seconds = (v: string | undefined, name: string) => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw usage(`--${name} must be a whole number of seconds, got "${v}"`);
    return Number(v);
  };
  const options = values.option?.map((o) => {
    const eq = o.indexOf('=');
    if (eq <= 0) throw usage(`--option ${o}: write id=label`);
    return { id: o.slice(0, eq), label: o.slice(eq + 1) || o.slice(0, eq) };
  });
  const saved = loadSaved(values.save);
  const ra = ReturnAddress.fromCreated(saved, { url: savedUrl(values.url, saved) });
  const { approval, event } = await ra.ask(positionals[0]!, {
    ...(values.details !== undefined ? { details: values.details } : {}),
    ...(options ? { options } : {}),
    ...(values.field ? { fields: values.field.map((f) => parseFieldSpec(f, usage)) } : {}),
    ...(values.expires !== undefined ? { expiresIn: seconds(values.expires, 'expires') } : {}),
    ...(values.timeout !== undefined ? { timeout: seconds(values.timeout, 'timeout') } : {}),
    onUrl: (url, a) => {
      process.stderr.write(`Open this link to answer (expires ${a.expires_at}):\n${url}\n`);
    },
  });
  if (!event) {
    process.stderr.write(`timed out: no answer to ${approval.id} yet (it stays open until ${approval.expires_at})\n`);
    return 2;
  }
  out(event);
  if (event.type !== 'approval.decided') {
    process.stderr.write(`${event.type}: no answer\n`);
    return 2;
  }
  const chosen = (event.data as { option?: string }).option;
  process.stderr.write(`answered: ${chosen}\n`);
  return chosen === approval.options[0]?.id ? 0 : 3;
}
