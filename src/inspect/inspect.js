// The /inspect page: reads an address's live event stream with fetch() (so the read token travels
// in the Authorization header, never in a URL), parses Server-Sent Events itself, and reconnects
// with Last-Event-ID after a drop, backing off. Every piece of an event is put on the page with
// textContent: nothing from the queue is ever parsed as HTML.

const API = '/api/v1/addresses/';
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 10_000;

const $ = (id) => document.getElementById(id);

/** An element with text content and optional class/attributes; children appended as given. */
function el(tag, opts = {}, ...children) {
  const node = document.createElement(tag);
  if (opts.className) node.className = opts.className;
  if (opts.text !== undefined) node.textContent = String(opts.text);
  for (const [k, v] of Object.entries(opts.attrs ?? {})) node.setAttribute(k, String(v));
  for (const c of children) if (c) node.append(c);
  return node;
}

const state = {
  addressId: '',
  token: '',
  inboxUrl: '',
  cursor: 0,
  controller: null,
  backoff: MIN_BACKOFF_MS,
  retryTimer: undefined,
  connected: false,
  /** sequence -> article element */
  shown: new Map(),
};

function setStatus(kind, text) {
  const s = $('status');
  s.dataset.state = kind;
  s.textContent = text;
}

function authHeaders() {
  return { authorization: `Bearer ${state.token}` };
}

async function apiError(res) {
  try {
    const body = await res.json();
    return `${res.status} ${body.error.code}: ${body.error.message}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}

// --- the address and the curl lines ---------------------------------------------------------

function renderAddress(a) {
  const dl = $('address');
  dl.replaceChildren();
  for (const [k, v] of [
    ['id', a.id],
    ['name', a.name],
    ['task id', a.taskId],
    ['email', a.email],
    ['created', a.createdAt],
    ['expires', a.expiresAt],
  ]) {
    if (v === undefined) continue;
    dl.append(el('dt', { text: k }), el('dd', { text: v, className: k === 'id' || k === 'email' ? 'mono' : '' }));
  }
  $('address-section').hidden = false;
}

const shellQuote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

function renderCurl() {
  const base = location.origin;
  const inbox = state.inboxUrl || '<inbox_url>';
  const capture = state.inboxUrl ? state.inboxUrl.replace('/api/v1/inbox/', '/api/v1/hooks/') : '<hook_url>';
  const lines = [
    [
      'Deliver an event to the inbox URL',
      `curl -s -X POST ${shellQuote(inbox)} -H 'content-type: application/json' -d '{"type":"test.ping","data":{"hello":"world"}}'`,
    ],
    [
      'Send any callback to the capture URL (hook_url)',
      `curl -s -X POST ${shellQuote(`${capture}/github`)} -H 'content-type: application/json' -H 'x-github-event: ping' -d '{"zen":"hello"}'`,
    ],
    ['Read the queue', `curl -s ${shellQuote(`${base}${API}${state.addressId}/events?after=0&wait=25`)} -H "Authorization: Bearer $READ_TOKEN"`],
    ['Follow the live stream', `curl -sN ${shellQuote(`${base}${API}${state.addressId}/events/stream`)} -H "Authorization: Bearer $READ_TOKEN"`],
  ];
  const box = $('curl');
  box.replaceChildren();
  for (const [label, cmd] of lines) {
    const pre = el('pre', { text: cmd });
    const copy = el('button', { text: 'Copy', attrs: { type: 'button' } });
    copy.addEventListener('click', () => {
      navigator.clipboard?.writeText(cmd).then(
        () => {
          copy.textContent = 'Copied';
        },
        () => {
          copy.textContent = 'Select and copy';
        },
      );
    });
    box.append(el('div', { className: 'hint', text: label }), el('div', { className: 'curl' }, pre, copy));
  }
  $('curl-section').hidden = false;
}

// --- events ---------------------------------------------------------------------------------

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const mailbox = (m) => (isObject(m) ? (m.name ? `${m.name} <${m.address}>` : String(m.address)) : '');

function fieldList(pairs) {
  const dl = el('dl', { className: 'fields' });
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    dl.append(el('dt', { text: k }), el('dd', { text: v }));
  }
  return dl;
}

function emailView(d) {
  const box = el('div', { className: 'email' });
  box.append(
    fieldList([
      ['from', mailbox(d.from)],
      ['to', Array.isArray(d.to) ? d.to.map(mailbox).join(', ') : ''],
      ['subject', d.subject],
      ['date', d.date],
    ]),
  );
  if (typeof d.text === 'string') box.append(el('div', { className: 'text', text: d.text }));
  else if (typeof d.html === 'string') box.append(el('div', { className: 'hint', text: 'HTML only (shown as source below, never rendered).' }));
  if (Array.isArray(d.attachments) && d.attachments.length > 0) {
    const ul = el('ul', { className: 'attachments' });
    for (const a of d.attachments) ul.append(el('li', { text: `${a?.filename ?? '(no name)'} (${a?.content_type ?? '?'}, ${a?.size ?? '?'} bytes)` }));
    box.append(el('div', { className: 'hint', text: 'Attachments' }), ul);
  }
  return box;
}

function requestView(d) {
  const box = el('div', { className: 'request' });
  box.append(
    fieldList([
      ['request', `${d.method ?? ''} /${String(d.path ?? '').replace(/^\//, '')}`],
      ['content type', d.content_type],
      ['remote ip', d.remote_ip],
      ['signature', isObject(d.signature) ? `${d.signature.scheme ?? ''} verified=${d.signature.verified} ${d.signature.reason ?? ''}` : undefined],
    ]),
  );
  if (isObject(d.headers)) {
    const headers = el('details', {}, el('summary', { text: `headers (${Object.keys(d.headers).length})` }));
    headers.append(
      el('pre', {
        text: Object.entries(d.headers)
          .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : v}`)
          .join('\n'),
      }),
    );
    box.append(headers);
  }
  if (typeof d.body === 'string') box.append(el('div', { className: 'text', text: d.body }));
  return box;
}

function ackState(e) {
  if (e.acknowledged_at) return el('span', { className: 'ack-state', text: `acknowledged ${e.acknowledged_at}` });
  const button = el('button', { text: 'Ack', className: 'ack-state', attrs: { type: 'button', 'data-ack': e.id } });
  button.addEventListener('click', () => ack(e, button));
  return button;
}

async function ack(e, button) {
  button.disabled = true;
  try {
    const res = await fetch(`${API}${encodeURIComponent(state.addressId)}/events/${encodeURIComponent(e.id)}/ack`, { method: 'POST', headers: authHeaders() });
    if (!res.ok) throw new Error(await apiError(res));
    const { event } = await res.json();
    renderEvent(event, false);
  } catch (err) {
    button.disabled = false;
    button.textContent = `Ack failed: ${err.message}`;
  }
}

/**
 * The service's own word on the event (design.md, "Trust: what an agent may believe"): its way in
 * and whether the sender was proved. Type, source and data are the sender's and may be forged.
 */
function trustBadge(t) {
  if (!isObject(t)) return el('span', { className: 'trust unverified', text: 'trust unknown' });
  const verified = t.verified === true;
  const text = `${t.ingress} · ${verified ? `verified${t.method ? ` (${t.method}${t.identity ? `: ${t.identity}` : ''})` : ''}` : 'not verified'}`;
  return el('span', {
    className: `trust ${verified ? 'verified' : 'unverified'}`,
    text,
    attrs: { title: verified ? 'The service proved the sender.' : (t.reason ?? 'Nothing about the sender was proved.') },
  });
}

function renderEvent(e, fresh) {
  const d = e.data;
  const article = el('article', {
    className: `event${e.acknowledged_at ? ' acked' : ''}${fresh ? ' fresh' : ''}`,
    attrs: { 'data-sequence': e.sequence, 'data-id': e.id },
  });
  article.append(
    el(
      'div',
      { className: 'event-head' },
      el('span', { className: 'seq', text: `#${e.sequence}` }),
      el('span', { className: 'type', text: e.type }),
      el('span', { className: 'source', text: `source ${e.source}` }),
      trustBadge(e.trust),
      el('time', { className: 'time', text: e.created_at, attrs: { datetime: e.created_at } }),
      el('span', { className: 'eid mono', text: e.id }),
      ackState(e),
    ),
  );
  // Email and captured requests are shown as text; their JSON starts folded.
  let summarised = true;
  if (isObject(d) && (e.source === 'email' || e.type.startsWith('email.'))) article.append(emailView(d));
  else if (isObject(d) && (e.type === 'http.request' || typeof d.method === 'string')) article.append(requestView(d));
  else summarised = false;
  if (isObject(e.metadata)) article.append(fieldList(Object.entries(e.metadata).map(([k, v]) => [`metadata.${k}`, v])));
  const json = JSON.stringify(e, null, 2);
  const details = el('details', {}, el('summary', { text: `JSON (${json.length} characters)` }), el('pre', { className: 'json', text: json }));
  if (!summarised && json.length < 4000) details.open = true;
  article.append(details);

  const old = state.shown.get(e.sequence);
  if (old) {
    old.replaceWith(article);
  } else {
    // Newest first: before the first shown event with a smaller sequence.
    const list = $('events');
    let before = null;
    for (const child of list.children) {
      if (Number(child.dataset.sequence) < e.sequence) {
        before = child;
        break;
      }
    }
    list.insertBefore(article, before);
  }
  state.shown.set(e.sequence, article);
  $('event-count').textContent = String(state.shown.size);
}

// --- the stream -----------------------------------------------------------------------------

/** Splits SSE text into messages; returns the unparsed rest. */
function parseSse(buffer, onMessage) {
  const blocks = buffer.split(/\r\n\r\n|\n\n|\r\r/);
  const rest = blocks.pop();
  for (const block of blocks) {
    const msg = { event: 'message', data: [], id: undefined };
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') msg.data.push(value);
      else if (field === 'event') msg.event = value;
      else if (field === 'id') msg.id = value;
    }
    if (msg.data.length > 0) onMessage(msg);
  }
  return rest;
}

function onMessage(msg) {
  if (msg.event === 'event') {
    const e = JSON.parse(msg.data.join('\n'));
    if (e.sequence > state.cursor) state.cursor = e.sequence;
    renderEvent(e, true);
    $('events-section').hidden = false;
  } else if (msg.event === 'error') {
    const body = JSON.parse(msg.data.join('\n'));
    throw Object.assign(new Error(`${body.error.code}: ${body.error.message}`), { fatal: body.error.code === 'not_found' });
  }
}

async function readStream(signal) {
  const headers = authHeaders();
  if (state.cursor > 0) headers['last-event-id'] = String(state.cursor);
  const res = await fetch(`${API}${encodeURIComponent(state.addressId)}/events/stream`, { headers, signal, cache: 'no-store' });
  if (!res.ok) {
    const message = await apiError(res);
    // A wrong token or a deleted address will not get better by retrying.
    throw Object.assign(new Error(message), { fatal: res.status === 401 || res.status === 404 || res.status === 400 });
  }
  setStatus('live', `Live: following ${state.addressId} after #${state.cursor}.`);
  state.backoff = MIN_BACKOFF_MS;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer = parseSse(buffer + value, onMessage);
  }
}

async function follow(controller) {
  while (!controller.signal.aborted) {
    try {
      await readStream(controller.signal);
      if (controller.signal.aborted) return;
      setStatus('reconnecting', `The stream ended; reconnecting after #${state.cursor} in ${state.backoff} ms…`);
    } catch (err) {
      if (controller.signal.aborted) return;
      if (err.fatal) {
        setStatus('stopped', `Stopped: ${err.message}`);
        stop(false);
        return;
      }
      setStatus('reconnecting', `Connection lost (${err.message}); reconnecting after #${state.cursor} in ${state.backoff} ms…`);
    }
    await new Promise((resolve) => {
      state.retryTimer = setTimeout(resolve, state.backoff);
    });
    state.backoff = Math.min(MAX_BACKOFF_MS, state.backoff * 2);
  }
}

function stop(updateStatus = true) {
  state.controller?.abort();
  state.controller = null;
  clearTimeout(state.retryTimer);
  $('disconnect').disabled = true;
  if (updateStatus) setStatus('idle', 'Disconnected.');
}

async function connect() {
  stop(false);
  state.addressId = $('address-id').value.trim();
  state.token = $('read-token').value.trim();
  state.inboxUrl = $('inbox-url').value.trim();
  state.cursor = 0;
  state.backoff = MIN_BACKOFF_MS;
  state.shown.clear();
  $('events').replaceChildren();
  $('event-count').textContent = '0';
  const controller = new AbortController();
  state.controller = controller;
  $('disconnect').disabled = false;
  setStatus('connecting', `Connecting to ${state.addressId}…`);
  try {
    const res = await fetch(`${API}${encodeURIComponent(state.addressId)}`, { headers: authHeaders(), signal: controller.signal });
    if (!res.ok) {
      setStatus('stopped', `Cannot open the address: ${await apiError(res)}`);
      stop(false);
      return;
    }
    renderAddress((await res.json()).address);
  } catch (err) {
    if (!controller.signal.aborted) setStatus('stopped', `Cannot reach the service: ${err.message}`);
    return;
  }
  renderCurl();
  $('events-section').hidden = false;
  follow(controller);
}

function init() {
  // #<address_id>:<read_token>: the fragment never reaches the server; it is taken out of the
  // address bar so the token is not left in history.
  const m = /^#(addr_[0-9a-z]+):(aa_read_[A-Za-z0-9_-]+)$/.exec(location.hash);
  if (m) {
    $('address-id').value = m[1];
    $('read-token').value = m[2];
    history.replaceState(null, '', location.pathname);
  }
  $('connect').addEventListener('submit', (ev) => {
    ev.preventDefault();
    connect();
  });
  $('disconnect').addEventListener('click', () => stop());
  if (m) connect();
}

init();
