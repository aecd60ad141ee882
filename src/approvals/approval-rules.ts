// What an approval and an answer may hold (design.md, "Approvals"), checked the same way whichever way
// they came (JSON from a program, or the page's form). No I/O. Every refusal is a 400
// invalid_request whose message names the field and what it must be.
import { randomBytes } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import { STORABLE_TEXT_RE } from '../domain/storable-text.js';
import type { ApprovalField, ApprovalOption, ApprovalRecord } from './approval-model.js';

export const APPROVAL_ID_RE = /^apr_[0-9a-z]{26}$/;
export const APPROVAL_SECRET_RE = /^aa_approve_[A-Za-z0-9_-]{43}$/;
export const newApprovalId = () => `apr_${randomBytes(26).reduce((s, b) => s + '0123456789abcdefghijklmnopqrstuvwxyz'[b % 36], '')}`;
/** 32 random bytes, like the other secrets; shown once, in the page's URL. */
export const newApprovalSecret = () => `aa_approve_${randomBytes(32).toString('base64url')}`;

export const LIMITS = {
  question: 500,
  details: 10_000,
  optionsMin: 2,
  optionsMax: 5,
  optionId: 40,
  optionLabel: 100,
  fields: 10,
  fieldName: 40,
  fieldLabel: 200,
  choices: 20,
  choice: 100,
  maxResponses: 100,
  reason: 2_000,
  text: 1_000,
  textarea: 10_000,
  userAgent: 512,
} as const;

export const OPTION_ID_PATTERN = `^[A-Za-z0-9_.-]{1,${LIMITS.optionId}}$`;
export const FIELD_NAME_PATTERN = `^[A-Za-z][A-Za-z0-9_]{0,${LIMITS.fieldName - 1}}$`;
export const DEFAULT_OPTIONS: ApprovalOption[] = [
  { id: 'approve', label: 'Approve' },
  { id: 'deny', label: 'Deny' },
];
export const DEFAULT_APPROVAL_SECONDS = 86_400;

const invalid = (message: string) => new ApiError('invalid_request', message);

/** The create body once its schema passed: the rules a schema cannot say (uniqueness, choices, the address's lifetime). */
export function checkDefinition(options: ApprovalOption[], fields: ApprovalField[]): void {
  const ids = new Set<string>();
  options.forEach((o, i) => {
    if (ids.has(o.id)) throw invalid(`options/${i}/id: "${o.id}" is used by an earlier option; each option needs an id of its own.`);
    ids.add(o.id);
  });
  const names = new Set<string>();
  fields.forEach((f, i) => {
    if (names.has(f.name)) throw invalid(`fields/${i}/name: "${f.name}" is used by an earlier field; each field needs a name of its own.`);
    names.add(f.name);
    if (f.type === 'select') {
      if (!f.choices || f.choices.length === 0) throw invalid(`fields/${i}/choices: a select field needs 1 to ${LIMITS.choices} choices.`);
      if (new Set(f.choices).size !== f.choices.length) throw invalid(`fields/${i}/choices: each choice must appear once.`);
    } else if (f.choices !== undefined) {
      throw invalid(`fields/${i}/choices: only a field of type select takes choices (this one is ${f.type}).`);
    }
  });
}

/** The approval's lifetime in seconds: `requested` (or the default), within [minSeconds, the address's remaining lifetime]. */
export function approvalLifetime(requested: number | undefined, minSeconds: number, remainingMs: number): number {
  const remaining = Math.floor(remainingMs / 1000);
  if (remaining < minSeconds) {
    throw invalid(
      `expires_in_seconds: this address has ${Math.max(0, remaining)} s left, less than the shortest approval (${minSeconds} s); create the approval on an address that lives longer.`,
    );
  }
  if (requested === undefined) return Math.min(DEFAULT_APPROVAL_SECONDS, remaining);
  if (requested < minSeconds || requested > remaining) {
    throw invalid(`expires_in_seconds: must be between ${minSeconds} and the address's remaining lifetime (${remaining} s), got ${requested}.`);
  }
  return requested;
}

/** An answer as a program sends it (JSON), before it is checked. */
export interface AnswerInput {
  option?: unknown;
  reason?: unknown;
  fields?: unknown;
}

export interface Answer {
  option: ApprovalOption;
  reason: string | null;
  fields: Record<string, string | number | boolean | null>;
}

/**
 * The page's form as an AnswerInput: `option`, `reason`, and `field.<name>` per field (a checkbox
 * sends its field only when ticked). A repeated name is refused: which of two values was meant cannot be told.
 */
export function answerFromForm(form: URLSearchParams, approval: ApprovalRecord): AnswerInput {
  const seen = new Set<string>();
  for (const key of form.keys()) {
    if (seen.has(key)) throw invalid(`${key}: sent more than once; send each form field once.`);
    seen.add(key);
  }
  const fields: Record<string, unknown> = {};
  for (const f of approval.fields) {
    const v = form.get(`field.${f.name}`);
    if (f.type === 'boolean') fields[f.name] = v !== null;
    else if (v !== null && v.trim() !== '') fields[f.name] = v;
  }
  for (const key of seen) {
    if (key !== 'option' && key !== 'reason' && !(key.startsWith('field.') && approval.fields.some((f) => `field.${f.name}` === key))) {
      throw invalid(`${key.slice(0, 60)}: not a field of this form.`);
    }
  }
  const reason = form.get('reason');
  return { option: form.get('option') ?? undefined, reason: reason === null || reason.trim() === '' ? undefined : reason, fields };
}

const NUMBER_TEXT = /^\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
/** Text a store keeps as it was sent: no U+0000 and no lone surrogate. */
const isText = (v: unknown): v is string => typeof v === 'string' && STORABLE_TEXT_RE.test(v);

/** Checks an answer against the approval's options and fields; `fromForm` lets numbers arrive as text. */
export function checkAnswer(input: AnswerInput, approval: ApprovalRecord, fromForm: boolean): Answer {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw invalid('body: must be an object {option, reason?, fields?}.');
  for (const key of Object.keys(input)) {
    if (key !== 'option' && key !== 'reason' && key !== 'fields')
      throw invalid(`${key.slice(0, 60)}: unknown property; an answer has option, reason and fields.`);
  }
  const ids = approval.options.map((o) => o.id);
  const option = approval.options.find((o) => o.id === input.option);
  if (!option) {
    throw invalid(
      input.option === undefined
        ? `option: choose one of ${ids.join(', ')}.`
        : `option: ${JSON.stringify(String(input.option).slice(0, 60))} is not an option of this approval; choose one of ${ids.join(', ')}.`,
    );
  }
  let reason: string | null = null;
  if (input.reason !== undefined && input.reason !== null) {
    if (!isText(input.reason) || input.reason.length > LIMITS.reason) throw invalid(`reason: must be text of at most ${LIMITS.reason} characters.`);
    reason = input.reason;
  }
  const given = input.fields ?? {};
  if (given === null || typeof given !== 'object' || Array.isArray(given)) throw invalid('fields: must be an object of field name to value.');
  const values = given as Record<string, unknown>;
  for (const name of Object.keys(values)) {
    if (!approval.fields.some((f) => f.name === name)) throw invalid(`fields.${name.slice(0, 60)}: not a field of this approval.`);
  }
  const fields: Answer['fields'] = {};
  for (const f of approval.fields) {
    fields[f.name] = fieldValue(f, Object.hasOwn(values, f.name) ? values[f.name] : undefined, fromForm);
  }
  return { option, reason, fields };
}

function fieldValue(f: ApprovalField, v: unknown, fromForm: boolean): string | number | boolean | null {
  const where = `fields.${f.name} (${f.label})`;
  if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) {
    if (f.required && f.type !== 'boolean') throw invalid(`${where}: is required.`);
    return f.type === 'boolean' ? false : null;
  }
  switch (f.type) {
    case 'text':
    case 'textarea': {
      const max = f.type === 'text' ? LIMITS.text : LIMITS.textarea;
      if (!isText(v) || v.length > max) throw invalid(`${where}: must be text of at most ${max} characters.`);
      return v;
    }
    case 'number': {
      if (typeof v === 'number' && Number.isFinite(v)) return v;
      if (fromForm && typeof v === 'string' && NUMBER_TEXT.test(v) && Number.isFinite(Number(v))) return Number(v);
      throw invalid(`${where}: must be a number.`);
    }
    case 'boolean':
      if (typeof v !== 'boolean') throw invalid(`${where}: must be true or false.`);
      if (f.required && !v) throw invalid(`${where}: must be ticked.`);
      return v;
    case 'select':
      if (typeof v !== 'string' || !f.choices?.includes(v)) throw invalid(`${where}: must be one of ${(f.choices ?? []).join(', ')}.`);
      return v;
  }
}
