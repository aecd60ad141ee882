// Row `reads`: a page of 50 events from the service beside the ceiling's GET of the same bytes.

import type { Request as CannonRequest } from 'autocannon';
import type { Child } from './processes.js';
import { api, cannon, createAddress, details, JSON_HEADERS, log, rows, sideBySide, WEBHOOK } from './setup.js';

export async function readsScenario(ceiling: Child, service: Child): Promise<void> {
  const label = 'Reads: a page of 50 events';
  log(`${label}`);
  const a = await createAddress(service.url);
  for (let i = 0; i < 50; i++) {
    const r = await api(service.url + a.inboxPath, { method: 'POST', body: WEBHOOK, headers: JSON_HEADERS });
    if (r.status !== 202) throw new Error(`seed: ${r.status}`);
  }
  const page = await api(`${service.url}${a.eventsPath}?limit=50`, { headers: { authorization: `Bearer ${a.token}` } });
  if (page.json?.events?.length !== 50) throw new Error('seed page has not 50 events');
  await api(`${ceiling.url}/bench/page`, { method: 'PUT', body: JSON.stringify(page.json), headers: JSON_HEADERS });
  const req: CannonRequest = { method: 'GET', path: `${a.eventsPath}?limit=50`, headers: { authorization: `Bearer ${a.token}` } };
  const r = await sideBySide(
    'reads',
    (n) => cannon('ceiling', [ceiling.url], req, n, [ceiling.pid]),
    (n) => cannon('service', [service.url], req, n, [service.pid]),
  );
  const ratio = r.serviceRps / r.ceilingRps;
  rows.push({
    key: 'reads',
    label,
    unit: 'req/s',
    ceiling: r.ceilingRps,
    service: r.serviceRps,
    ratio,
    target: '>= 0.5x ceiling',
    met: ratio >= 0.5 && r.serviceErrors === 0,
    note: `${JSON.stringify(page.json).length} bytes per page; ${r.serviceErrors} errors`,
  });
  details.reads = r;
}
