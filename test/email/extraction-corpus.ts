// Scores data.extracted over the .eml corpus (test/fixtures/email/corpus/, expected.json beside it):
// precision and recall of the one-time codes and of the link kinds, and exact reply texts.
// The test asserts thresholds; `node dist/test/email/extraction-corpus.js` prints the numbers
// (with every miss and every false hit) without asserting.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseEmailMessage } from '../../src/email/mime-to-event.js';

export const CORPUS_DIR = fileURLToPath(new URL('../../../test/fixtures/email/corpus/', import.meta.url));

interface Expected {
  otp_codes: string[];
  /** The links whose kind is not `other`; every other link must come out as `other`. */
  links: Array<{ url: string; kind: string }>;
  /** Checked only when given (replies). */
  reply_text?: string;
}

export interface PrecisionRecall {
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
  precision: number;
  recall: number;
}

export interface CorpusScore {
  messages: number;
  otp: PrecisionRecall;
  links: PrecisionRecall;
  replies: { checked: number; exact: number };
  /** One line per miss, false hit or wrong reply text. */
  mistakes: string[];
}

function pr(tp: number, fp: number, fn: number): PrecisionRecall {
  return {
    truePositives: tp,
    falsePositives: fp,
    falseNegatives: fn,
    precision: tp + fp === 0 ? 1 : tp / (tp + fp),
    recall: tp + fn === 0 ? 1 : tp / (tp + fn),
  };
}

export async function scoreCorpus(dir = CORPUS_DIR): Promise<CorpusScore> {
  const expected = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as Record<string, Expected>;
  const mistakes: string[] = [];
  const otp = { tp: 0, fp: 0, fn: 0 };
  const links = { tp: 0, fp: 0, fn: 0 };
  const replies = { checked: 0, exact: 0 };
  for (const [file, want] of Object.entries(expected)) {
    const { extracted } = await parseEmailMessage(readFileSync(dir + file));
    for (const code of extracted.otp_codes) {
      if (want.otp_codes.includes(code)) otp.tp++;
      else {
        otp.fp++;
        mistakes.push(`${file}: false OTP code ${code}`);
      }
    }
    for (const code of want.otp_codes) {
      if (!extracted.otp_codes.includes(code)) {
        otp.fn++;
        mistakes.push(`${file}: missed OTP code ${code}`);
      }
    }
    // A link counts for its kind: (url, kind) pairs over the kinds that are not `other`.
    const got = extracted.links.filter((l) => l.kind !== 'other').map((l) => `${l.kind} ${l.url}`);
    const wanted = want.links.map((l) => `${l.kind} ${l.url}`);
    for (const g of got) {
      if (wanted.includes(g)) links.tp++;
      else {
        links.fp++;
        mistakes.push(`${file}: false link ${g}`);
      }
    }
    for (const w of wanted) {
      if (!got.includes(w)) {
        links.fn++;
        mistakes.push(`${file}: missed link ${w}`);
      }
    }
    if (want.reply_text !== undefined) {
      replies.checked++;
      if (extracted.reply_text === want.reply_text) replies.exact++;
      else mistakes.push(`${file}: reply_text ${JSON.stringify(extracted.reply_text)}, expected ${JSON.stringify(want.reply_text)}`);
    }
  }
  return { messages: Object.keys(expected).length, otp: pr(otp.tp, otp.fp, otp.fn), links: pr(links.tp, links.fp, links.fn), replies, mistakes };
}

export function formatScore(s: CorpusScore): string {
  const f = (x: number) => x.toFixed(3);
  return [
    `extraction corpus: ${s.messages} messages`,
    `  otp_codes   precision ${f(s.otp.precision)}  recall ${f(s.otp.recall)}  (tp ${s.otp.truePositives}, fp ${s.otp.falsePositives}, fn ${s.otp.falseNegatives})`,
    `  link kinds  precision ${f(s.links.precision)}  recall ${f(s.links.recall)}  (tp ${s.links.truePositives}, fp ${s.links.falsePositives}, fn ${s.links.falseNegatives})`,
    `  reply_text  ${s.replies.exact}/${s.replies.checked} exact`,
    ...s.mistakes.map((m) => `  - ${m}`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatScore(await scoreCorpus()));
}
