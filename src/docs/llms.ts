// /llms.txt and /llms-full.txt: plain-text guides for an agent reading them cold, with this
// deployment's real base URL, email domain and limits filled in.
import type { Config } from '../config.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../domain/errors.js';
import { MAX_VALUE_DEPTH } from '../domain/json-depth.js';

function flow(c: Config): string {
  const b = c.baseUrl;
  return `1. Create an address (no account, no key) and save the WHOLE response; read_token is shown once:

   curl -s -X POST ${b}/api/v1/addresses \\
     -H 'content-type: application/json' \\
     -d '{"name":"wait for the build bot","task_id":"task-42","expires_in_seconds":86400}'

   -> 201 {"address":{"id":"addr_…","slug":"…","name":"…","taskId":"task-42","email":"<slug>@${c.emailDomain}",
           "createdAt":"…","expiresAt":"…"},
          "credentials":{"read_token":"aa_read_…","note":"…"},
          "endpoints":{"inbox_url":"${b}/api/v1/inbox/addr_…/aa_ingress_…",
                       "events_url":"${b}/api/v1/addresses/addr_…/events",
                       "mcp_url":"${b}/api/v1/addresses/addr_…/mcp",
                       "hook_url":"${b}/api/v1/hooks/addr_…/aa_ingress_…"}}

2. Give endpoints.inbox_url (or address.email) to whoever must answer. They POST JSON to it:

   curl -s -X POST "$INBOX_URL" \\
     -H 'content-type: application/json' \\
     -H 'Idempotency-Key: build-981-finished' \\
     -d '{"type":"build.finished","data":{"status":"green"},"metadata":{"build":"981"}}'

   -> 202 {"event":{…,"sequence":1,…},"duplicate":false}   (a retry with the same key: 200, duplicate true)

   A sender with a format of its own (GitHub, Stripe, Slack, an OAuth redirect, a form) gets
   endpoints.hook_url instead: it takes any request as it is, and each becomes one event.

3. Later (same process or another one), read the queue in order with the token, waiting up to 25 s:

   curl -s "$EVENTS_URL?after=0&wait=25" -H "Authorization: Bearer $READ_TOKEN"

   -> 200 {"events":[…],"next_cursor":1,"has_more":false}

   Handle events in sequence order, save next_cursor, and pass it as the next after.

4. Acknowledge what you handled (optional, idempotent):

   curl -s -X POST "$EVENTS_URL/$EVENT_ID/ack" -H "Authorization: Bearer $READ_TOKEN"`;
}

function toolkit(c: Config): string {
  const b = c.baseUrl;
  return `No curl loops needed: the repository ships a CLI, a TypeScript client and a stdlib-only
Python module over the same API. All three take the base URL from --url / url, else the
RETURN_ADDRESS_URL environment variable, else http://localhost:3000. \`match\` is a set of
path=value pairs dotted into the event (data.from.address=noreply@github.com); every pair must
hold; strings compare exactly, numbers, booleans and null as their JSON text, a path into an
array matches any member, a missing path never matches. MCP wait_for_event takes the same match.

CLI (\`npx return-address …\` in a clone after npm install; JSON on stdout, messages on stderr):
  export RETURN_ADDRESS_URL=${b}
  npx return-address create --name signup --save /tmp/ra.json   # whole create response + "cursor", mode 0600
  npx return-address wait --save /tmp/ra.json --type email.received \\
      --match data.from.address=noreply@github.com --timeout 300 --ack
      # prints the event; exit 0 found, 2 timeout, 1 error. --ack acknowledges it and moves the
      # saved cursor past it; without --ack the cursor stays and the same event is found again.
  npx return-address events --save /tmp/ra.json      # one page after the saved cursor; advances it
  npx return-address deliver --save /tmp/ra.json --type build.finished --data '{"ok":true}' [--key K]
  npx return-address ack --save /tmp/ra.json evt_…
  npx return-address get --save /tmp/ra.json
  npx return-address delete --save /tmp/ra.json
  npx return-address serve                            # runs the service (same as npm start)
Every command has --help.

Python 3.9+, no pip (copy clients/python/return_address.py next to your script):
  from return_address import ReturnAddress, ReturnAddressError
  ra = ReturnAddress.create(url="${b}", name="signup")   # ra.created is the whole response
  ev = ra.wait_for(type="email.received", match={"data.from.address": "noreply@github.com"}, timeout=300)
  if ev: ra.ack(ev["id"])                                 # ev is None on timeout
  # also: ra.get(), ra.deliver(type, data), ra.events(after=0), ra.delete(),
  #       ReturnAddress.from_created(saved_response) to resume; errors: ReturnAddressError(.status, .code, .message)
  The same CLI: python3 return_address.py create --save a.json; python3 return_address.py wait --save a.json --type email.received

TypeScript (import from the package; types are the API's own schemas):
  import { ReturnAddress, ReturnAddressError } from 'return-address';
  const ra = await ReturnAddress.create({ url: '${b}', name: 'signup' });
  const { event, cursor } = await ra.waitFor({ type: 'email.received', match: { 'data.from.address': 'noreply@github.com' }, timeout: 300 });
  for await (const e of ra.events({ after: 0 })) { … }   // walks the queue by cursor
  await ra.ack(event.id); await ra.deliver({ type: 'x', data: {} }); await ra.delete();
waitFor/wait_for long-poll from a cursor the client keeps (ra.cursor), retry network errors and
429/5xx answers with backoff from that same cursor, and so never skip or repeat an event; an
error that lasts to the timeout is raised as ReturnAddressError (status 0, code network_error).`;
}

function capture(c: Config): string {
  const b = c.baseUrl;
  return `endpoints.hook_url = ${b}/api/v1/hooks/<address_id>/aa_ingress_<43 chars>: the same write-only
secret as inbox_url, for senders that send their own bodies. It takes GET, POST, PUT, PATCH and
DELETE on that URL and on any sub-path below it ($HOOK_URL/github/pr-42), any content type, any
body up to ${c.maxCaptureBytes} bytes (MAX_CAPTURE_BYTES; more: 413). HEAD and OPTIONS answer 200 and
store nothing. Each request becomes one event; a 2xx means it is durably stored, as on the inbox.
Unknown address or wrong secret: 404 (before the body is read); expired: 410; queue full: 429.

The event:
- type/source: github.<X-GitHub-Event>/github; stripe.<body.type>/stripe; slack.<event.type, else
  type, else "command" for a slash command>/slack; <body.type>/webhook for Standard Webhooks and
  Svix (webhook-id / svix-id headers); anything else http.request/https. A name taken from the
  request is used only when it is 1-128 characters of [A-Za-z0-9_.:/-] (else github.event,
  stripe.event, http.request).
- data = { method, path, query, headers, content_type, body, raw, attachments, remote_ip, signature }
  path: the sub-path ("/github/pr-42", "" when none). query: an object of strings (a repeated key
  an array). headers: lower-case names (a repeated header joined with ", "). body: the parsed JSON
  (its numbers as the sender wrote them), form fields as an object, text (text/*, XML) as a string,
  multipart fields as an object, else null. raw = { size, sha256, encoding: "utf8"|"base64",
  content }: the exact bytes, so you can check a signature yourself. attachments: multipart files as
  [{ filename, content_type, size, content_base64 }]. signature = { scheme, verified, reason }.
- A malformed body (broken JSON or multipart, bytes that are not UTF-8, JSON nested deeper than
  ${MAX_VALUE_DEPTH - 1} levels) is never refused: it is stored with body null and its bytes in raw.
- dedupe_key: the Idempotency-Key header (1-255 characters, no control characters, else 400),
  else webhook:<webhook-id or svix-id>, github:<X-GitHub-Delivery>, stripe:<body.id> of a Stripe
  event, shopify:<X-Shopify-Webhook-Id>, slack:<event_id> of a Slack Events API delivery. A
  provider's retry of one delivery is then 200 duplicate, and stores nothing new, as on the inbox.

Answers:
- Slack url_verification ({"type":"url_verification","challenge":C}) -> 200 {"challenge":C}.
- GET ?hub.mode=subscribe&hub.challenge=X (Meta: WhatsApp, Messenger, Instagram) -> 200 text/plain X.
- ?validationToken=X (Microsoft Graph subscriptions) -> 200 text/plain X.
- A GET whose Accept includes text/html (a browser, e.g. an OAuth redirect) -> 200 a static page
  "Received. You may close this tab." that echoes nothing from the request.
- Anything else -> 202 {"event":{"id":"evt_…","sequence":N},"duplicate":false}, or 200 with
  duplicate true. The answer never holds event data: the capture URL cannot read.
Handshakes are stored as events too.

GitHub: repository Settings > Webhooks > Add webhook: Payload URL = hook_url (or hook_url + "/github"),
Content type application/json, Secret = a random string you also give this service (below). Then:
   npx return-address wait --save /tmp/ra.json --type github.pull_request --match data.body.action=closed
   (or GET the events URL and look for type "github.pull_request").

Stripe: Dashboard > Developers > Webhooks > Add endpoint: URL = hook_url; copy its signing secret
(whsec_…). Events arrive as type "stripe.<event type>", e.g. stripe.checkout.session.completed, keyed
by the Stripe event id, so Stripe's retries never make a second event.

OAuth: use hook_url (plus any sub-path) as the redirect_uri:
   https://accounts.example.com/authorize?response_type=code&client_id=…&state=S&redirect_uri=<$HOOK_URL/oauth, URL-encoded>
The person's browser lands on the "you may close this tab" page; you get an event with
data.path "/oauth" and data.query {"code": "…", "state": "S"}: check state, then exchange the code.
   npx return-address wait --save /tmp/ra.json --type http.request --match data.query.state=S

Signature checks (optional): give the service the secrets the senders sign with; they are replaced
as a whole by each PUT (a scheme left out is removed, {} removes all), never returned, never logged,
and stored sealed under a key only this address's read token and inbox secret derive:
   curl -s -X PUT "${b}/api/v1/addresses/$ADDRESS_ID/signing-secrets" \\
     -H "Authorization: Bearer $READ_TOKEN" -H 'content-type: application/json' \\
     -d '{"github":"my-webhook-secret","stripe":"whsec_…","slack":"8f742231b10e8888abcd99yyyzzz85a5","standard_webhooks":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}'
   -> 200 {"configured":["github","stripe","slack","standard_webhooks"]}
Schemes: github (X-Hub-Signature-256, HMAC-SHA256 of the body), stripe (Stripe-Signature v1, within
300 s of its t=), slack (X-Slack-Signature v0, within 300 s of X-Slack-Request-Timestamp),
standard_webhooks (webhook-signature or svix-signature, whsec_ base64 keys, within 300 s).
data.signature.verified: true, false (the reason says why: mismatch, stale timestamp, malformed
header), or null (no signature header, or no secret for its scheme). A bad signature is recorded,
never refused: treat an event whose verified is not true as untrusted.`;
}

export function llmsTxt(c: Config): string {
  return `# Return Address

> A persistent return address for a short-lived AI agent: one unauthenticated call gives an email
> address, a secret write-only inbox URL for HTTP callbacks, and a read token for one durable,
> ordered event queue. Read it later with a cursor and long-polling, or over MCP.

Base URL: ${c.baseUrl}

## Typical flow

${flow(c)}

## CLI, TypeScript and Python clients

${toolkit(c)}

## More

- Complete guide (every field, rule, limit and error code): ${c.baseUrl}/llms-full.txt
- OpenAPI 3.1 description: ${c.baseUrl}/openapi.json
- MCP: attach endpoints.mcp_url as a Streamable HTTP MCP server with header "Authorization: Bearer <read_token>".
- Capture URL (endpoints.hook_url): any sender's own requests (GitHub, Stripe, Slack, OAuth redirects),
  signature checks, handshakes: see "Capture URL" in llms-full.txt.
- Live: GET {events_url}/stream with the bearer token is the queue as Server-Sent Events (id = sequence,
  resume with Last-Event-ID); a person can watch it at ${c.baseUrl}/inspect#<address_id>:<read_token>.
`;
}

function errorTable(): string {
  return (Object.entries(ERROR_CATALOGUE) as [ErrorCode, { status: number; description: string }][])
    .map(([code, e]) => `- ${e.status} ${code}: ${e.description}`)
    .join('\n');
}

export function llmsFullTxt(c: Config): string {
  const b = c.baseUrl;
  return `# Return Address: complete guide

Base URL: ${b}
API version: path prefix /api/v1; description version 0.1.0.
All request and response bodies are JSON. Send Content-Type: application/json with every body.

## What it is

Each address has: an inbound email address (<slug>@${c.emailDomain}), a secret-bearing write-only
inbox URL, a bearer-protected events URL, an MCP URL, and a read token shown once. Every HTTP
delivery to the inbox URL and every email to the address becomes an event in one durable queue per
address, ordered by a per-address sequence number (1, 2, 3, … with no gaps). A later process reads
the queue with the read token, a cursor (after) and optional long-polling (wait), and acknowledges
events it handled.

## Typical flow

${flow(c)}

## Endpoints

1. POST   /api/v1/addresses                              no auth          optional body   -> 201 CreateAddressResponse
2. GET    /api/v1/addresses/{addressId}                  Bearer token                     -> 200 {"address": Address}
3. DELETE /api/v1/addresses/{addressId}                  Bearer token                     -> 204, empty body
4. GET    /api/v1/addresses/{addressId}/events           Bearer token     ?after&limit&wait -> 200 EventPage
5. POST   /api/v1/addresses/{addressId}/events/{eventId}/ack  Bearer token  no body       -> 200 {"event": Event}
6. POST   /api/v1/inbox/{addressId}/{secret}             secret in path   CreateEvent body -> 202 new / 200 duplicate
   GET    /api/v1/addresses/{addressId}/events/stream    Bearer token     ?after, Last-Event-ID -> 200 text/event-stream
   POST   /api/v1/addresses/{addressId}/mcp              Bearer token     MCP Streamable HTTP
   GET|POST|PUT|PATCH|DELETE /api/v1/hooks/{addressId}/{secret}[/any/sub/path]  secret in path  any body -> 202 new / 200
   PUT    /api/v1/addresses/{addressId}/signing-secrets  Bearer token     JSON body        -> 200 {"configured":[…]}
   GET    /inspect                                       none (token typed in, or in the #fragment)  -> a live page for a person
   GET    /healthz (process up), /readyz (storage reachable), /openapi.json, /llms.txt, /llms-full.txt

Authentication for 2-5 and MCP: header "Authorization: Bearer aa_read_…". Order of checks: a missing
or malformed bearer is 401; then an unknown address is 404; then a token of another address is 401;
only then anything else (the query, the body, an event id, even an undecodable or over-long one,
which is 404). The three 401s have the same code and different messages, none depending on whether
the address exists:
- no Authorization header: "No Authorization header: …" -> send Authorization: Bearer <read_token>;
- not "Bearer aa_read_…" (another scheme, a malformed token, an inbox secret): "The Authorization
  header is not a bearer read token: …" (or "… holds an inbox secret …") -> fix the header;
- a well-formed read token that is not this address's: "This read token does not open this
  address: …" -> use the read_token returned when this address was created.
Every 401 carries the challenge WWW-Authenticate: Bearer realm="return-address", with
error="invalid_token" added when an Authorization header was sent (the last two cases).

Methods: a known path asked with a method it does not have is 405 method_not_allowed with an Allow
header naming the ones it has (e.g. "Allow: GET, HEAD" on /healthz: HEAD is answered wherever GET
is, with the headers and no body).

Query parameters: every endpoint refuses one it does not know with 400 invalid_request naming it
and the allowed ones ("Unknown query parameter 'cursor': the allowed ones are after, limit, wait."),
so a misspelt parameter is never silently ignored. Only endpoint 4 and the event stream take any.

## Create address (endpoint 1)

Body (optional; no body, an empty body and {} are all fine; no other properties allowed):
- name: string, at most 100 characters. Default "untitled".
- task_id: string, at most 200 characters. Returned as address.taskId.
- expires_in_seconds: integer, 60 to 31536000 inclusive.
name and task_id may not contain U+0000. Default ${c.defaultTtlSeconds} (${Math.round(c.defaultTtlSeconds / 86400 * 10) / 10} days).

Response 201:
- address: { id (addr_ + 26 chars [0-9a-z]), slug (12 chars [a-z0-9], starts with a letter), name,
  taskId (only when given), email, createdAt, expiresAt (always present) }. Address fields are camelCase.
- credentials.read_token: aa_read_ + 43 base64url characters. Shown ONLY here. It cannot be
  recovered: the service stores only its SHA-256 hash. credentials.note says so.
- endpoints.inbox_url: ${b}/api/v1/inbox/<address_id>/aa_ingress_<43 chars>. Write-only: it can
  deliver but never read.
- endpoints.events_url: ${b}/api/v1/addresses/<address_id>/events
- endpoints.mcp_url: ${b}/api/v1/addresses/<address_id>/mcp
- endpoints.hook_url: ${b}/api/v1/hooks/<address_id>/aa_ingress_<43 chars>, the capture URL (below).

Rate limit: ${c.createRateLimit} creations per ${c.createRateWindowSeconds} s per client IP (fixed window), shared by
all instances. Over it: 429 rate_limited with a Retry-After header (seconds). Refused attempts
(429 or 4xx) do not count.

## Deliver (endpoint 6)

POST the JSON body to inbox_url. Content-Type must be application/json (a charset parameter is fine).
Body (required, a JSON object; no other properties allowed):
- type: string, default "message.received". Free string chosen by the sender.
- source: string, default "https". Email events use "email".
- data: any JSON value, default null. Nested at most ${MAX_VALUE_DEPTH} levels (deeper: 400).
- metadata: object whose values are strings.
- dedupe_key: string, 1-255 characters, no control characters.
Header Idempotency-Key (optional): 1-255 characters, no control characters.
type and source may not contain U+0000 (400); inside data and metadata it is kept as sent.

Idempotency: the effective key is the Idempotency-Key header, else the body dedupe_key; it is stored
as the event's dedupe_key. Header and body key both present and equal: fine; different: 409
idempotency_key_mismatch (nothing stored, no key consumed). A repeat of a key within the same
address returns 200 with duplicate: true and the ORIGINAL event unchanged, whatever the new body
says, for as long as the original event exists (also after it was acknowledged). N concurrent
deliveries with one key create exactly one event. Keys are scoped to one address. The Message-IDs
of email events are keys of their own kind: a mail can never match (and so suppress) an HTTP key,
even with the same text, and an HTTP key never matches a mail.

Order of checks: the address and the secret first (unknown address or wrong secret: 404, before
the body is read and before the body, the headers or the query are validated, so a request without
the secret learns nothing else and costs no parsing); then Content-Type (415), size (413), JSON
(400 invalid_json), the body and the Idempotency-Key header (400 invalid_request); then 410, 409, 429.

Answers: 202 {"event": Event, "duplicate": false} for a new event; 200 {…, "duplicate": true} for a
repeat. A 2xx means the event is durably committed (fsynced) before the answer is sent.
Errors: 400 invalid_request / invalid_json, 404 not_found (unknown address or wrong secret, which look
the same), 409 idempotency_key_mismatch, 410 address_expired, 413 payload_too_large (body over
${c.maxPayloadBytes} bytes), 415 unsupported_media_type, 429 queue_full (with Retry-After).

## Capture URL: any sender's own requests

${capture(c)}

## Read the queue (endpoint 4)

Query parameters (plain decimal integers; anything else, out of range, or another parameter, is 400
invalid_request naming it, never clamped):
- after: 0 to 9007199254740991 (Number.MAX_SAFE_INTEGER), default 0. Return events whose sequence is
  greater. A cursor past the last sequence is an empty page with next_cursor = after; a larger number
  is 400 saying the range.
- limit: 1 to 100, default 50.
- wait: 0 to 25 seconds, default 0. Long-poll when nothing is after the cursor.

Response 200 EventPage: {"events": [Event…], "next_cursor": n, "has_more": bool}
- events ascend by sequence; acknowledged and unacknowledged events are both listed.
- next_cursor = the sequence of the last event returned, or after when none is. Use it as the next after.
- has_more = whether an event with a sequence greater than next_cursor exists (then read again at once).
- A page also stops before the event that would take its events' stored data and metadata past
  ${c.maxPageBytes} bytes (MAX_PAGE_BYTES); it always holds at least one event, however large, and
  has_more says to read on. So a page may hold fewer than limit events with has_more true.
- A cursor never skips an event: sequence N+1 is never visible before N.
- With wait > 0 and nothing after the cursor, the request returns within milliseconds of the next
  event (delivered over HTTP or email, on any instance), else after wait seconds with an empty page.
  Deleting the address ends waiting reads with 404 not_found. A server shutdown ends them with an
  empty page (just read again).

Event (snake_case): id (evt_ + 26 chars; opaque: order by sequence, never by id), address_id,
sequence (>= 1), type, source, data (always present, null when none), metadata (when given),
dedupe_key (when given), created_at, acknowledged_at (once acknowledged).

## Live event stream (Server-Sent Events)

GET ${c.baseUrl}/api/v1/addresses/{addressId}/events/stream with the bearer token: a text/event-stream
of every event after the cursor, then each new one as soon as it is committed (on any instance), in
sequence order and without a gap. The same credential checks, in the same order, as endpoint 4,
answered as JSON before the stream starts.
- Cursor: header Last-Event-ID (the id of the last message received; EventSource resends it when it
  reconnects) or query after (0 to 9007199254740991, default 0); Last-Event-ID wins when both are
  given. after is the only query parameter.
- One message per event:
    id: <sequence>
    event: event
    data: <the Event JSON, exactly as in endpoint 4's events, on one line>
- A comment line ": ping" after every ${c.sseHeartbeatMs / 1000} s without an event (SSE_HEARTBEAT_MS), and
  "retry: 1000" at the start.
- Deleting the address ends the stream with "event: error" and
  data {"error":{"code":"not_found","message":"…"}}. A server shutdown ends it after a comment
  (": shutting down"): reconnect with Last-Event-ID and nothing is missed or repeated.
- A client that leaves what was sent unread for ${c.sseDrainTimeoutMs / 1000} s (SSE_DRAIN_TIMEOUT_MS) is disconnected;
  the service holds at most about 1 MiB of events per stream while waiting for it.
- curl -sN "$EVENTS_URL/stream" -H "Authorization: Bearer $READ_TOKEN"
  (browsers' EventSource cannot send the Authorization header: use fetch() and read the body, as
  ${c.baseUrl}/inspect does.)

## Inspector page

${c.baseUrl}/inspect#<address_id>:<read_token> is a page for a person: it shows the address and its
queue live (newest first, JSON pretty-printed, email as text, captured requests as method/path/
headers), with ack buttons and copyable curl lines. The fragment never reaches the server; the page
sends the token only in the Authorization header. Everything is shown as text, never as HTML, and
the page loads nothing from anywhere else (strict Content-Security-Policy).

## Acknowledge (endpoint 5)

POST …/events/{eventId}/ack with no body -> 200 {"event": Event} with acknowledged_at. Idempotent:
a second ack returns 200 and the same acknowledged_at. Unknown event: 404 not_found.

## Inbound email

Mail to <slug>@${c.emailDomain} or <slug>+<tag>@${c.emailDomain} (SMTP port ${c.smtpPort}; plain SMTP,
STARTTLS when the operator configured a certificate, no AUTH) becomes an event with type
"email.received" and source "email". The 250 at the end of DATA is sent only once the event is
committed. Unknown, deleted or expired recipient: 550 at RCPT. Messages over ${c.maxEmailBytes} bytes: 552.
A message to several addresses becomes one event in each (one per address, even if named twice).

- dedupe_key = the Message-ID without angle brackets, so an MTA retry does not duplicate (an id over
  255 characters or with control characters becomes "sha256:<hex of the id>"). No Message-ID: no
  dedupe_key.
- data = { from, to, cc, subject, text, html, message_id, in_reply_to, references, date, headers,
  attachments, raw_size, parse_error, extracted, authentication }. Every key is always present:
  - from: {name, address} or null; to, cc: [{name, address}] (groups flattened); name is null when
    the mailbox has no display name.
  - subject (decoded; "" when the header is present but empty), text, html, message_id, in_reply_to
    (first id): string, or null when absent. Ids carry no angle brackets.
  - references: [ids], [] when absent. date: ISO 8601 UTC, null when absent or unparseable.
  - headers: {lower-cased name: unfolded, undecoded value}; a repeated header (Received, …) has its
    values joined with "\\n" in message order.
  - attachments: [{filename (null when the part names none), content_type, size (decoded bytes),
    content_base64}], [] when none; inline parts (cid: images) included.
  - raw_size: size of the message in bytes as received. parse_error: null, or why the MIME
    structure could not be decoded; the event then holds the top-level headers and the undecoded
    body as text. Malformed mail is never refused for its MIME.
  - extracted = { otp_codes, links, reply_text }, read by the service from subject, text and html
    (the html's text when there is no text part; the first 256 KiB of each body):
    - otp_codes: ["482913", "K7P2XQ", …], [] when none. 4-8 digits, two equal digit groups
      ("482-913" is given as "482913") or 4-8 upper-case letters and digits, only near a code word
      (code, verification, OTP, passcode, PIN, one-time, código, Bestätigungscode, code de
      vérification, 验证码, 認証コード, …). Phone numbers, dates, years, prices, zip and promo codes, order
      numbers and anything inside a URL are not codes.
    - links: [{url, kind}], http(s) only, each URL once, in order of appearance (List-Unsubscribe
      first). kind: "magic_link" (a sign-in link carrying a token), "verify" (confirm an address or
      action), "reset" (password reset), "unsubscribe" (also every List-Unsubscribe URL), "other".
      Classified from the anchor text, the words before the link, and the URL.
    - reply_text: the new text of the message: quoted history ("On … wrote:", "> " lines, Outlook
      "From:/Sent:" blocks, "-----Original Message-----", the Gmail quote) and the signature ("-- ",
      "Sent from my iPhone", …) removed; null when nothing is left.
    These are heuristics: check a code or link against the mail when it matters. The service never
    follows, fetches or renders anything in a mail; treat every value as untrusted input.
  - authentication = { spf, dkim, dmarc, summary }, checked at receipt with the SMTP client's IP,
    EHLO name and MAIL FROM. spf, dkim, dmarc are the results as mailauth reports them: "pass",
    "fail", "softfail" (spf), "neutral" (dkim: also a body changed after signing), "none" (no record
    or no signature), "temperror" (DNS did not answer), "permerror", "policy". summary is "pass"
    only when DMARC passes (the From domain is proven), "fail" when any of the three failed,
    "temperror" when a lookup failed and nothing failed, else "none". DNS lookups are bounded (3 s
    each, 8 s per message); past that, temperror, and the mail is still accepted.
- metadata = { smtp_mail_from ("" for the null sender), smtp_rcpt_to (the recipient as sent),
  remote_ip, tag (only when +tag was used) }.

## MCP

endpoints.mcp_url (${b}/api/v1/addresses/<address_id>/mcp) serves the Model Context Protocol over
Streamable HTTP, stateless: no Mcp-Session-Id, every POST stands alone, any instance answers. It
takes the same header "Authorization: Bearer <read_token>" and sees only that one address. Send
Accept: application/json, text/event-stream; answers are application/json. GET and DELETE on it
give 405 method_not_allowed with Allow: POST (no server-initiated stream, no session to end). A
missing or wrong token is 401 unauthorized, an unknown address 404 not_found, a wrong Accept header,
an unsupported MCP-Protocol-Version header or a batch of more than 10 messages 400 invalid_request,
and malformed JSON 400 invalid_json, all in the error shape below. The tools are listed once and
never change: the server does not send tools/list_changed (capabilities.tools.listChanged: false).

JSON-RPC errors (the body {"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}):
- JSON that is not a JSON-RPC 2.0 message (no "jsonrpc":"2.0", an id that is null or not a string
  or number, not an object), or an empty batch []: HTTP 400 with error -32600 Invalid Request and
  id null. Nothing in the body is run.
- tools/call without params.name (or with params the protocol does not allow, e.g. arguments that
  are not an object): HTTP 200 with error -32602 Invalid params for that id, naming the field.
  Inside a batch only that message fails; the others are answered in the same reply array.
- an unknown method: -32601 Method not found. (An unknown tool name is a tool result with
  isError: true, "… Tool <name> not found".)
Bad tool arguments are not protocol errors: see below.

Tools (results are the HTTP API's JSON, as structuredContent and as JSON text):
- get_address {} -> {"address": Address} (as endpoint 2).
- list_events {after: integer >= 0 = 0, limit: integer 1-100 = 50, wait: integer seconds 0-25 = 0}
  -> EventPage {"events": [...], "next_cursor": n, "has_more": bool} (as endpoint 4, same rules;
  with wait > 0 it returns within milliseconds of a delivery). A result carries its page twice
  (structuredContent and text), so an MCP page stops at 1 MiB of stored data and metadata (at least
  one event; has_more says to read on), and a JSON-RPC batch holds at most 10 messages (more: 400).
- ack_event {event_id: "evt_…" (required)} -> {"event": Event} with acknowledged_at (as endpoint 5;
  idempotent).
- wait_for_event {after: integer >= 0 = 0, timeout: seconds 0-25 = 25 (fractions allowed),
  type: string (optional), match: {path: value} (optional)} -> {"event": Event | null,
  "next_cursor": n}: the first event with sequence > after (of exactly that type, and where every
  dotted path of match equals its value, e.g. {"data.from.address": "noreply@github.com"}; the
  same rule as the clients below), waiting up to timeout seconds for one;
  null when the timeout passes. next_cursor is the event's sequence, or how far the queue was
  scanned; pass it as after next time. It does not acknowledge.
Arguments are checked against these ranges and no other arguments are accepted. A bad argument
(e.g. limit 0) or an unknown event is a tool result with isError: true, not a protocol error: for
arguments the text names the argument; for the queue's own errors the text is the error body,
e.g. {"error":{"code":"not_found","message":"Event not found."}}. Deleting the address ends a
waiting call with not_found; a client that disconnects ends its wait; a server shutdown ends it
with event null.

Client configuration, with MCP_URL = endpoints.mcp_url and READ_TOKEN = credentials.read_token
(any MCP client that speaks Streamable HTTP; "type" is "http" or "streamable-http" depending on
the client):
  {"mcpServers": {"return-address": {"type": "http",
    "url": "${b}/api/v1/addresses/<address_id>/mcp",
    "headers": {"Authorization": "Bearer <read_token>"}}}}
Claude Code:
  claude mcp add --transport http return-address "$MCP_URL" --header "Authorization: Bearer $READ_TOKEN"
TypeScript SDK (@modelcontextprotocol/sdk):
  const client = new Client({ name: "my-agent", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL),
    { requestInit: { headers: { Authorization: \`Bearer \${READ_TOKEN}\` } } }));
  const { structuredContent } = await client.callTool({ name: "wait_for_event", arguments: { after: 0, timeout: 25 } });
Raw JSON-RPC with curl (one request per POST; no initialize needed for a single call):
  curl -s -X POST "$MCP_URL" -H "Authorization: Bearer $READ_TOKEN" \\
    -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_events","arguments":{"after":0}}}'

## CLI, TypeScript and Python clients

${toolkit(c)}

## Expiry and retention

- expiresAt is always set (default lifetime ${c.defaultTtlSeconds} s). After it, HTTP deliveries get 410
  address_expired and email gets 550; reading, ack and delete keep working for a grace period of
  ${c.expiredGraceSeconds} s, after which the address and all its events are deleted (then 404).
- An address holds at most ${c.maxEventsPerAddress} events and ${c.maxBytesPerAddress} bytes of data and metadata. When a
  new event would exceed either, the fewest oldest acknowledged events that make room are deleted; if
  the acknowledged ones cannot make room, the delivery gets 429 queue_full (Retry-After; email: 452).
  Sequences never restart. Acknowledge what you handled.
- DELETE removes the address and all its events at once.

## Limits

- name: max 100 characters; task_id: max 200 characters; expires_in_seconds: 60 to 31536000.
- limit: 1 to 100 (default 50); wait: 0 to 25 s (default 0); after: 0 to 9007199254740991 (default 0).
- Delivery body: max ${c.maxPayloadBytes} bytes; JSON nesting of data/metadata: max ${MAX_VALUE_DEPTH} levels.
- Capture URL body: max ${c.maxCaptureBytes} bytes (MAX_CAPTURE_BYTES). An event holds the body twice
  (parsed and raw), so a page of such events may be a single event.
- Signing secrets: 1 to 1024 characters each.
- Idempotency-Key / dedupe_key: 1 to 255 characters, no control characters.
- A page of events: at most ${c.maxPageBytes} bytes of stored data and metadata (at least one event).
- Email: max ${c.maxEmailBytes} bytes per message; ${c.smtpMaxConnectionsPerIp} SMTP connections at once per client IP (more: 421).
- Bytes per address: ${c.maxBytesPerAddress} of stored data and metadata (MAX_BYTES_PER_ADDRESS), pruned
  and refused like the event count; one event larger than that: 413 payload_too_large.
- Events per address: ${c.maxEventsPerAddress}. Address creations: ${c.createRateLimit} per ${c.createRateWindowSeconds} s per client IP.

## Errors

Every non-2xx answer has Content-Type application/json and the body
{"error": {"code": "<code>", "message": "<human-readable, naming the field when relevant>"}}
(only the MCP endpoint answers a body that is not JSON-RPC with a JSON-RPC error instead, see MCP).
Every 400 names the field, query parameter or header at fault and what it must be. A body that is
not parseable JSON is invalid_json on every JSON endpoint, whatever else is wrong with it.

Bodies over the limit (413), and any other error answered before a body was read (401, 404, 415),
carry "Connection: close": the service still reads and discards up to ${c.maxDiscardBytes} more bytes
(MAX_DISCARD_BYTES) so a client that writes its whole body before reading gets the answer; past that
it closes the connection.

${errorTable()}

## Security

- Read tokens and inbox secrets are stored only as SHA-256 hashes and compared in constant time; a
  copy of the database lets nobody read or write a queue. Neither ever appears in logs.
- The inbox URL can only deliver; the read token can only read, ack and delete. Keep both secret.
- A lost read token cannot be recovered: create a new address.
`;
}
