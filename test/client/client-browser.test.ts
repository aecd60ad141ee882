// @return-address/client in a real browser (Chromium), where there is no `process`, no Node
// module and only the browser's fetch: the page, on the service's own origin, imports the built
// package files (served by request interception from packages/client/dist) and runs the
// create / deliver / wait / ack flow against the live service.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'puppeteer-core';
import { launchBrowser, noChromium } from '../browser.js';
import { startTestService, type TestService } from '../helpers.js';

const DIST = join('packages', 'client', 'dist');
const PREFIX = '/__client/';

describe('@return-address/client in a browser', { skip: noChromium }, () => {
  let svc: TestService;
  let browser: Browser;
  before(async () => {
    svc = await startTestService();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it('creates an address, waits for a delivered event and acks it, with nothing but fetch', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      const url = new URL(req.url());
      if (!url.pathname.startsWith(PREFIX)) return void req.continue();
      const file = normalize(join(DIST, url.pathname.slice(PREFIX.length)));
      if (!file.startsWith(DIST)) return void req.respond({ status: 404, body: '' });
      void req.respond({ status: 200, contentType: 'text/javascript', body: readFileSync(file, 'utf8') });
    });
    await page.goto(`${svc.baseUrl}/llms.txt`);
    const result = await page.evaluate(
      async (moduleUrl: string, base: string) => {
        const { ReturnAddress, ReturnAddressError } = await import(moduleUrl);
        const ra = await ReturnAddress.create({ url: base, name: 'browser', ttl: 600 });
        setTimeout(() => {
          void ReturnAddress.deliverTo(ra.inboxUrl, { type: 'from.browser', data: { n: 7 } });
        }, 200);
        const { event, cursor } = await ra.waitFor({ type: 'from.browser', match: { 'data.n': '7' }, timeout: 10 });
        const acked = await ra.ack(event.id);
        let error = '';
        try {
          await ra.waitFor({ after: -1, timeout: 0 });
        } catch (e) {
          const err = e as { status: number; code: string };
          error = e instanceof ReturnAddressError ? `${err.status} ${err.code}` : String(e);
        }
        // No argument and no process: the default URL.
        const defaultUrl = new ReturnAddress({ id: 'x', token: 't' }).url;
        await ra.delete();
        return {
          type: event.type,
          data: event.data,
          cursor,
          acked: typeof acked.acknowledged_at,
          error,
          defaultUrl,
          hasProcess: typeof (globalThis as { process?: unknown }).process,
        };
      },
      `${svc.baseUrl}${PREFIX}index.js`,
      svc.baseUrl,
    );
    assert.deepEqual(errors, []);
    assert.deepEqual(result, {
      type: 'from.browser',
      data: { n: 7 },
      cursor: 1,
      acked: 'string',
      error: '400 invalid_request',
      defaultUrl: 'http://localhost:3000',
      hasProcess: 'undefined',
    });
  });
});
