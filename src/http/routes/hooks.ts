// The capture URL (design.md, "Capture URL"): any method, any sub-path, any content type, each request one
// event. Its own plugin context holds the only parser that takes every content type, as bytes, up to
// MAX_CAPTURE_BYTES; the rest of the API keeps its JSON-only parser and MAX_PAYLOAD_BYTES.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import { isBrowserNavigation } from '../../capture/browser-navigation.js';
import { type CapturedRequest, headersFromRaw } from '../../capture/captured-request.js';
import { handshakeAnswer } from '../../capture/handshake.js';
import { sendJsonText } from '../json-text.js';
import { PER_METHOD } from '../openapi-document.js';
import { errorHandler } from '../plugins/api-error-handler.js';
import { authenticatedAddress, requireInboxSecret } from '../plugins/authentication.js';
import { clientControls } from '../plugins/client-controls.js';
import type { AppDeps } from '../route-deps.js';
import { AnyQuery, CaptureReceipt, errorResponses, HookParams, HookSubPathParams, NO_AUTH } from '../schemas.js';

const CAPTURE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const ALLOW = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const EMPTY = Buffer.alloc(0);

/**
 * What a person's browser sees after an OAuth redirect or a link: static, so nothing from the request
 * (a code, a state, an error text) is ever echoed into a page; no script, no style, no request out.
 */
export const RECEIVED_PAGE =
  '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
  '<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">' +
  '<title>Received</title></head><body><h1>Received</h1>' +
  '<p>This request reached its return address and was stored for the agent that is waiting for it.</p>' +
  '<p>You may close this tab.</p></body></html>\n';
const PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

/** The path below `/api/v1/hooks/{id}/{secret}`, as sent: "" or "/github/pr-42". */
function subPathOf(url: string): string {
  const q = url.indexOf('?');
  const rest = (q === -1 ? url : url.slice(0, q)).split('/').slice(6).join('/');
  return rest === '' ? '' : `/${rest}`;
}

/**
 * Fastify picks a body parser by Content-Type and refuses one it cannot parse (";;;") with 415, but
 * here every type is taken as bytes and the capture reads the header the sender wrote (rawHeaders).
 * So the router is shown one it always accepts.
 */
function takeAnyContentType(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  if (request.headers['content-type'] !== undefined) request.headers['content-type'] = 'application/octet-stream';
  done();
}

export const hookRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { service, capture, config, captureBudget: budget } = deps;
    const controls = clientControls(deps);
    const bodyLimit = config.maxCaptureBytes;
    /** Counts the body against the shared in-flight budget; every byte is given back when the answer is done. */
    const meterBody: preParsingHookHandler = (request, reply, payload, done) => {
      const declared = request.headers['content-length'];
      const release = budget.meter(payload, declared === undefined || !/^\d+$/.test(declared) ? undefined : Number(declared));
      if (release instanceof Error) return done(release);
      reply.raw.once('close', release);
      done(null, payload);
    };

    app.removeAllContentTypeParsers();
    // '*' also takes a body sent without any Content-Type.
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
    app.setErrorHandler(errorHandler({ maxPayloadBytes: bodyLimit, payloadLimitName: 'MAX_CAPTURE_BYTES', maxDiscardBytes: config.maxDiscardBytes }));

    async function captureRequest(request: FastifyRequest, reply: FastifyReply) {
      const url = request.url;
      const q = url.indexOf('?');
      const captured: CapturedRequest = {
        method: request.method,
        subPath: subPathOf(url),
        query: q === -1 ? '' : url.slice(q + 1),
        headers: headersFromRaw(request.raw.rawHeaders),
        body: Buffer.isBuffer(request.body) ? request.body : EMPTY,
        remoteIp: request.ip,
      };
      const { secret } = request.params as { secret: string };
      const { delivery, body } = await capture.capture(authenticatedAddress(request), secret, captured);
      const handshake = handshakeAnswer(request.method, captured.query, body);
      if (handshake) return reply.code(200).header('x-content-type-options', 'nosniff').type(handshake.contentType).send(handshake.body);
      if (isBrowserNavigation(request.method, captured.headers)) {
        return reply.code(200).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(RECEIVED_PAGE);
      }
      const { event, duplicate } = delivery;
      return sendJsonText(reply, `{"event":{"id":"${event.id}","sequence":${event.sequence}},"duplicate":${duplicate}}`, duplicate ? 200 : 202);
    }

    const description =
      'Takes any request as it is and stores it as one event (any method of GET, POST, PUT, PATCH, DELETE, ' +
      `any sub-path, any content type, at most ${bodyLimit} bytes: MAX_CAPTURE_BYTES); a 2xx means it is durably stored. ` +
      'The secret in the path is the only credential and it cannot read. Event shape, sender recognition, dedupe keys, ' +
      'handshakes, signatures, GitHub\'s form-encoded payloads and the browser page (a GET or a form POST whose Accept includes text/html): /llms-full.txt, section "Capture URL".' +
      ` Past ${config.maxInflightCaptureBytes} capture bytes being received by all clients at once (MAX_INFLIGHT_CAPTURE_BYTES): 503 unavailable with Retry-After.`;
    const responses = {
      200: {
        description: 'A handshake answered, the browser page, or a repeated idempotency key (duplicate: true).',
        content: {
          'application/json': { schema: CaptureReceipt },
          'text/plain': { schema: { type: 'string', description: 'The Meta hub.challenge or Microsoft Graph validationToken, as sent.' } },
          'text/html': { schema: { type: 'string', description: 'A static "received, you may close this tab" page.' } },
        },
      },
      202: { ...CaptureReceipt, description: 'A new event, durably stored.' },
      ...errorResponses(400, ...(config.blockCidrs.length > 0 ? [403] : []), 404, 410, 413, 429, 503),
    };

    for (const [url, params, hide] of [
      ['/api/v1/hooks/:addressId/:secret', HookParams, false],
      ['/api/v1/hooks/:addressId/:secret/*', HookSubPathParams, true],
    ] as const) {
      app.route({
        method: [...CAPTURE_METHODS],
        url,
        bodyLimit,
        exposeHeadRoute: false,
        onRequest: [...controls.blocked, requireInboxSecret(service), ...controls.deliveryLimit, takeAnyContentType],
        preParsing: meterBody,
        schema: {
          operationId: `capture${PER_METHOD}`,
          summary: 'Capture any request (write-only)',
          description,
          tags: ['capture'],
          security: NO_AUTH,
          hide,
          params,
          querystring: AnyQuery,
          response: responses,
        },
        handler: captureRequest,
      });
      app.route({
        method: ['HEAD', 'OPTIONS'],
        url,
        bodyLimit,
        onRequest: [...controls.blocked, requireInboxSecret(service), takeAnyContentType],
        schema: {
          operationId: `probeCapture${PER_METHOD}`,
          summary: 'Check the capture URL (stores nothing)',
          description: 'HEAD and OPTIONS answer 200 with an empty body and store nothing, for senders that probe a URL first.',
          tags: ['capture'],
          security: NO_AUTH,
          hide,
          params,
          querystring: AnyQuery,
          response: { 200: { type: 'null', description: 'Empty; Allow lists the methods.' }, ...errorResponses(404) },
        },
        handler: async (_request, reply) => reply.code(200).header('allow', ALLOW).send(null),
      });
    }
  };
