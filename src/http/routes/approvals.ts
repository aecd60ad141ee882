// Approvals (design.md, "Approvals"): the bearer routes that create, read and cancel one, and the public
// page at {base_url}/approve/{id}/{secret}. GET and HEAD of the page only show it, so a link
// scanner, a link preview or a prefetch can never answer; only a POST records (the page's form, or
// JSON from a program). The secret in the path is checked before any body is read, and is
// redacted from the request log (plugins/request-logging.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { Type } from 'typebox';
import type { ApprovalRecord } from '../../approvals/approval-model.js';
import { APPROVAL_PAGE_CSP, APPROVAL_PAGE_HEADERS, type PageState, renderApprovalPage, renderNotFoundPage } from '../../approvals/approval-page.js';
import { approvalView } from '../../approvals/approval-representation.js';
import { type AnswerInput, answerFromForm } from '../../approvals/approval-rules.js';
import { closedReason, effectiveStatus } from '../../approvals/approval-service.js';
import { ApiError } from '../../domain/errors.js';
import { eventJson } from '../../domain/representation.js';
import { sendJsonText } from '../json-text.js';
import { authenticatedAddress, requireReadToken } from '../plugins/authentication.js';
import type { AppDeps } from '../route-deps.js';
import { AddressParams, BEARER, ErrorBody, errorResponses, NO_AUTH } from '../schemas.js';
import { AnswerBody, ApprovalPageParams, ApprovalPageQuery, ApprovalParams, ApprovalResponse, createApprovalBody } from './approval-schemas.js';

/** A page's form and an answer's JSON are small: the largest valid answer is ~130 KB of text, escaped. */
const ANSWER_BODY_LIMIT = 256 * 1024;
const FORM_TYPE = 'application/x-www-form-urlencoded';

const opened = new WeakMap<FastifyRequest, ApprovalRecord>();
const isForm = (request: FastifyRequest) => (request.headers['content-type'] ?? '').toLowerCase().startsWith(FORM_TYPE);
/** A person's browser gets pages (GET, HEAD, the form's POST); a program posting JSON gets the JSON error body. */
const wantsPage = (request: FastifyRequest) => request.method !== 'POST' || isForm(request);

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).headers(APPROVAL_PAGE_HEADERS).send(html);
}

export const approvalRoutes =
  (deps: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { service, config, approvals } = deps;
    const auth = requireReadToken(service);

    app.post(
      '/api/v1/addresses/:addressId/approvals',
      {
        onRequest: auth,
        schema: {
          operationId: 'createApproval',
          summary: 'Ask a person: create an approval',
          description:
            'Creates an approval and answers its url, once: send it to the person through your own channel. Each answer appends approval.decided ' +
            "to this address's queue (expiry without one, approval.expired); wait for it with GET …/events and match data.approval_id. " +
            `An address holds at most MAX_PENDING_APPROVALS = ${config.maxPendingApprovals} pending approvals (one more is 429 too_many_approvals), and its approvals' bytes count toward ` +
            'MAX_BYTES_PER_ADDRESS beside its events (429 queue_full when pruning acknowledged events cannot make room). ' +
            'The page, the event, the limits and every error: /llms-full.txt, section "Approvals".',
          tags: ['approvals'],
          security: BEARER,
          params: AddressParams,
          body: createApprovalBody(config.minApprovalSeconds),
          response: {
            201: { ...ApprovalResponse, description: 'The approval, with its url (shown only here).' },
            ...errorResponses(401, 404, 413, 415, 429),
          },
        },
      },
      async (request, reply) => {
        const { approval, url } = await approvals.create(authenticatedAddress(request), request.body);
        return sendJsonText(reply, JSON.stringify({ approval: approvalView(approval, Date.now(), { url }) }), 201);
      },
    );

    app.get(
      '/api/v1/addresses/:addressId/approvals/:approvalId',
      {
        onRequest: auth,
        schema: {
          operationId: 'getApproval',
          summary: 'Read an approval: its status and answers',
          description: 'status (pending, decided, expired, cancelled), responses and every answer recorded. The url is not shown again.',
          tags: ['approvals'],
          security: BEARER,
          params: ApprovalParams,
          response: { 200: ApprovalResponse, ...errorResponses(401, 404) },
        },
      },
      async (request, reply) => {
        const { approval, answers } = await approvals.get(authenticatedAddress(request), request.params.approvalId);
        return sendJsonText(reply, JSON.stringify({ approval: approvalView(approval, Date.now(), { answers }) }));
      },
    );

    app.delete(
      '/api/v1/addresses/:addressId/approvals/:approvalId',
      {
        onRequest: auth,
        schema: {
          operationId: 'cancelApproval',
          summary: 'Cancel an approval',
          description:
            'Appends approval.cancelled (dedupe_key approval:{id}:cancelled) and closes the url: the page then says so and a POST gets 409. ' +
            'An approval no longer pending (all answers in, expired, already cancelled) is 409 approval_closed.',
          tags: ['approvals'],
          security: BEARER,
          params: ApprovalParams,
          response: { 200: ApprovalResponse, ...errorResponses(401, 404, 409, 413, 415, 429) },
        },
      },
      async (request, reply) => {
        const { approval, answers } = await approvals.cancel(authenticatedAddress(request), request.params.approvalId);
        return sendJsonText(reply, JSON.stringify({ approval: approvalView(approval, Date.now(), { answers }) }));
      },
    );

    // The public page, in a context of its own: it also takes the form's content type.
    await app.register(async (page) => {
      page.addContentTypeParser(FORM_TYPE, { parseAs: 'string', bodyLimit: ANSWER_BODY_LIMIT }, (_request, body, done) => {
        done(null, new URLSearchParams(body as string));
      });

      const openApproval: onRequestHookHandler = (request, reply, done) => {
        const { approvalId, secret } = request.params as { approvalId: string; secret: string };
        approvals.open(approvalId, secret).then(
          (a) => {
            opened.set(request, a);
            done();
          },
          (err: unknown) => {
            if (err instanceof ApiError && err.code === 'not_found' && wantsPage(request)) {
              // The body of a POST is not read: the connection closes after the answer.
              if (request.method === 'POST') reply.header('connection', 'close');
              sendPage(reply, 404, renderNotFoundPage());
              return;
            }
            done(err as Error);
          },
        );
      };

      /** An error the form gets as a page and a program as the error body (same status). */
      const pageOrError = (status: number) => {
        const { description, headers } = errorResponses(status)[status] as { description: string; headers?: Record<string, unknown> };
        return {
          description: `${description} The page's form gets the page again, saying what is wrong, with the same status.`,
          ...(headers ? { headers } : {}),
          content: { 'application/json': { schema: ErrorBody }, 'text/html': { schema: Type.String() } },
        };
      };
      const pageDoc = (description: string) => ({
        description,
        headers: { 'Content-Security-Policy': Type.String({ description: APPROVAL_PAGE_CSP }) },
        content: { 'text/html': { schema: Type.String() } },
      });

      page.get(
        '/approve/:approvalId/:secret',
        {
          onRequest: openApproval,
          schema: {
            operationId: 'getApprovalPage',
            summary: 'The approval page for a person (HTML)',
            description:
              'Shows the question, the details as text, the fields and one button per option, or says the approval is closed. ' +
              'Never changes anything, whoever asks (a mail scanner, a link preview, Sec-Purpose: prefetch, HEAD). Plain HTML and CSS, no script; ' +
              'served with Cache-Control: no-store, Referrer-Policy: no-referrer and a strict Content-Security-Policy. An unknown id and a wrong secret ' +
              'are both 404 with a page saying so.',
            tags: ['approvals'],
            security: NO_AUTH,
            params: ApprovalPageParams,
            querystring: ApprovalPageQuery,
            response: { 200: pageDoc('The page.'), 404: pageDoc('No approval at this URL (unknown id or wrong secret).') },
          },
        },
        (request, reply) => {
          const a = opened.get(request) as ApprovalRecord;
          const now = Date.now();
          const state: PageState = effectiveStatus(a, now) === 'pending' ? { kind: 'open' } : { kind: 'closed', message: closedReason(a, now) };
          sendPage(reply, 200, renderApprovalPage(a, state));
        },
      );

      page.post(
        '/approve/:approvalId/:secret',
        {
          onRequest: openApproval,
          bodyLimit: ANSWER_BODY_LIMIT,
          schema: {
            operationId: 'answerApproval',
            summary: "Answer an approval (the page's form, or JSON)",
            description:
              "Records one answer: appends approval.decided durably before the 200. The page's form (application/x-www-form-urlencoded: option, " +
              'reason, field.<name>) gets a page naming the recorded choice; JSON gets {approval, event}. An unknown option, a missing required field or a ' +
              'bad value records nothing: the form gets the page again with the error named (400), JSON gets 400 invalid_request. After max_responses ' +
              'answers, expiry or cancellation: 409 approval_closed (the form: a page saying so). A repeated form field is 400.',
            tags: ['approvals'],
            security: NO_AUTH,
            params: ApprovalPageParams,
            querystring: ApprovalPageQuery,
            body: {
              content: {
                'application/json': { schema: AnswerBody },
                [FORM_TYPE]: { schema: Type.Object({ option: Type.String(), reason: Type.Optional(Type.String()) }, { additionalProperties: Type.String() }) },
              },
            },
            response: {
              200: {
                description: 'Recorded. JSON: the approval and the approval.decided event; the form: the page naming the choice.',
                content: {
                  'application/json': {
                    schema: Type.Object({ approval: ApprovalResponse.properties.approval, event: Type.Object({}, { additionalProperties: true }) }),
                  },
                  'text/html': { schema: Type.String() },
                },
              },
              ...errorResponses(413, 415),
              400: pageOrError(400),
              404: pageOrError(404),
              409: pageOrError(409),
              429: pageOrError(429),
            },
          },
          // The body is checked by the approval's own rules (approval-rules.ts), for the form and JSON alike.
          validatorCompiler: () => () => true,
        },
        async (request, reply) => {
          const a = opened.get(request) as ApprovalRecord;
          const form = request.body instanceof URLSearchParams ? request.body : undefined;
          let input: AnswerInput | undefined;
          try {
            input = form ? answerFromForm(form, a) : (request.body as AnswerInput);
            const { event, approval } = await approvals.respond(a, input, form !== undefined, {
              remoteIp: request.ip,
              userAgent: request.headers['user-agent'],
            });
            if (!form) return sendJsonText(reply, `{"approval":${JSON.stringify(approvalView(approval, Date.now()))},"event":${eventJson(event)}}`);
            const data = JSON.parse(event.data) as { option: string; label: string };
            return sendPage(reply, 200, renderApprovalPage(approval, { kind: 'recorded', option: data.option, label: data.label }));
          } catch (err) {
            if (!form || !(err instanceof ApiError) || err.status >= 500) throw err;
            reply.headers(err.headers);
            if (err.code === 'approval_closed') return sendPage(reply, err.status, renderApprovalPage(a, { kind: 'closed', message: err.message }));
            const values: Record<string, string> = {};
            for (const f of a.fields) {
              const v = form.get(`field.${f.name}`);
              if (v !== null) values[f.name] = v.slice(0, 10_000);
            }
            return sendPage(
              reply,
              err.status,
              renderApprovalPage(a, { kind: 'open', error: err.message, values, reason: (form.get('reason') ?? '').slice(0, 2_000) }),
            );
          }
        },
      );
    });
  };
