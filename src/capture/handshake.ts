// Providers that check a URL before they send to it (design.md, "Capture URL"): the answer each expects, so
// the provider saves the capture URL. The request is stored as an event all the same.
import { queryObject } from './captured-request.js';
import type { ReadBody } from './request-body.js';

export interface HandshakeAnswer {
  contentType: string;
  body: string;
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export function handshakeAnswer(method: string, query: string, body: ReadBody): HandshakeAnswer | null {
  const v = body.value as Record<string, unknown> | undefined;
  // Slack Events API: {"type":"url_verification","challenge":…} answered with the challenge.
  if (method === 'POST' && v !== null && typeof v === 'object' && v.type === 'url_verification' && typeof v.challenge === 'string') {
    return { contentType: 'application/json; charset=utf-8', body: JSON.stringify({ challenge: v.challenge }) };
  }
  if (query === '') return null;
  const q = queryObject(query);
  // Meta (WhatsApp, Messenger, Instagram): GET ?hub.mode=subscribe&hub.challenge=X, answered with X.
  const challenge = first(q['hub.challenge']);
  if (method === 'GET' && first(q['hub.mode']) === 'subscribe' && challenge !== undefined) return { contentType: 'text/plain; charset=utf-8', body: challenge };
  // Microsoft Graph subscriptions: POST ?validationToken=X, answered with X as text within 10 s.
  const token = first(q.validationToken);
  if (token !== undefined) return { contentType: 'text/plain; charset=utf-8', body: token };
  return null;
}
