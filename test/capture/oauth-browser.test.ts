// An OAuth redirect as a person's browser makes it: headless Chromium (puppeteer-core) follows a
// provider's 302 to the capture URL. The browser shows the static page and runs nothing; the agent
// gets code and state in the event. Skipped, saying why, only when no chromium is installed.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'puppeteer-core';
import { launchBrowser, noChromium } from '../browser.js';
import { createAddress, listEvents, startTestService, type TestService } from '../helpers.js';

describe('an OAuth redirect in a real browser', { skip: noChromium }, () => {
  let svc: TestService;
  let browser: Browser;
  let provider: Server;
  before(async () => {
    svc = await startTestService();
    browser = await launchBrowser();
    // A stand-in authorization server: /authorize redirects to redirect_uri with a code and the state.
    provider = createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      const target = new URL(u.searchParams.get('redirect_uri') ?? '');
      target.searchParams.set('code', '4/0AeaYSHB"><script>alert(1)</script>');
      target.searchParams.set('state', u.searchParams.get('state') ?? '');
      res.writeHead(302, { location: target.toString() }).end();
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    await browser?.close();
    provider?.close();
    await svc?.stop();
  });

  it("lands on the static page, runs no script, and the event holds code, state and the browser's headers", async () => {
    const a = await createAddress(svc.baseUrl);
    const redirectUri = `${a.body.endpoints.hook_url}/oauth/callback`;
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    const { port } = provider.address() as AddressInfo;
    const response = await page.goto(`http://127.0.0.1:${port}/authorize?response_type=code&state=st-42&redirect_uri=${encodeURIComponent(redirectUri)}`);
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    const text = await page.$eval('body', (b) => b.textContent ?? '');
    assert.match(text, /You may close this tab/);
    assert.ok(!text.includes('4/0AeaYSHB') && !text.includes('st-42'), 'nothing from the request is shown');
    assert.equal(await page.$$eval('script', (s) => s.length), 0);
    assert.deepEqual(problems, []);
    await page.close();

    const [e] = (await listEvents(svc.baseUrl, a)).json.events;
    assert.equal(e.type, 'http.request');
    assert.equal(e.data.method, 'GET');
    assert.equal(e.data.path, '/oauth/callback');
    assert.deepEqual(e.data.query, { code: '4/0AeaYSHB"><script>alert(1)</script>', state: 'st-42' });
    assert.match(e.data.headers['user-agent'], /HeadlessChrome|Chrome/);
    assert.match(e.data.headers.accept, /text\/html/);
  });
});
