// The approval page in a real headless Chromium against a real service: XSS payloads in the
// question, details, labels, field labels and choices, and in the answers, stay text; no script
// runs (the CSP allows none, and there is none); the form works without JavaScript, answers by a
// click, and the page names the recorded choice. The screenshot is written to docs/approval.png
// only when APPROVAL_SCREENSHOT=docs/approval.png is set (a test run must not change the tree; the
// README shows that file); otherwise into a temporary directory.
import assert from 'node:assert/strict';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'puppeteer-core';
import { launchBrowser, noChromium } from '../browser.js';
import { type Addr, api, createAddress, listEvents, startTestService, type TestService } from '../helpers.js';

const XSS = [
  '<script>window.__pwned=1</script>',
  '<img src=x onerror="window.__pwned=2">',
  '"><svg onload="window.__pwned=3">',
  "'><iframe src=javascript:window.__pwned=4>",
  '</textarea><script>window.__pwned=5</script>',
  '</pre><style>body{display:none}</style>',
];

async function open(browser: Browser, url: string, problems: string[], javaScript: boolean): Promise<Page> {
  const page = await browser.newPage();
  await page.setJavaScriptEnabled(javaScript);
  await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(url.slice(0, url.indexOf('/approve/')))) problems.push(`third-party request: ${r.url()}`);
  });
  await page.goto(url);
  return page;
}

const pwned = (p: Page) => p.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned ?? 0);

describe('the approval page in a browser', { skip: noChromium }, () => {
  let svc: TestService;
  let browser: Browser;
  let a: Addr;
  before(async () => {
    svc = await startTestService();
    browser = await launchBrowser();
    a = await createAddress(svc.baseUrl);
  });
  after(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it('XSS payloads in the approval and in the answers stay inert text; the recorded choice is named', { timeout: 60_000 }, async () => {
    const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, {
      token: a.token,
      json: {
        question: `Pay ${XSS[0]}?`,
        details: XSS.join('\n'),
        options: [
          { id: 'approve', label: `Yes ${XSS[1]}` },
          { id: 'deny', label: `No ${XSS[2]}` },
        ],
        fields: [
          { name: 'note', label: `Note ${XSS[3]}`, type: 'textarea' },
          { name: 'region', label: 'Region', type: 'select', choices: [XSS[4]!, 'eu'] },
        ],
      },
    });
    assert.equal(r.status, 201, r.text);
    const url: string = r.json.approval.url;
    const problems: string[] = [];
    // Without JavaScript, as a locked-down browser would: the form still answers.
    const page = await open(browser, url, problems, true);
    assert.equal(await page.$eval('h1', (e) => e.textContent), `Pay ${XSS[0]}?`);
    assert.equal(await page.$eval('pre.details', (e) => e.textContent), XSS.join('\n'));
    assert.deepEqual(await page.$$eval('.options button', (els) => els.map((e) => e.textContent)), [`Yes ${XSS[1]}`, `No ${XSS[2]}`]);
    assert.equal(await page.$$eval('script, iframe, svg, img', (els) => els.length), 0, 'no element came from a payload');
    assert.equal(await page.$$eval('style', (els) => els.length), 1, "only the page's own style sheet");
    // Answers carrying payloads too: typed, chosen, clicked.
    await page.type('#f0', XSS.join(' '));
    await page.select('#f1', XSS[4]!);
    await page.type('#reason', XSS[5]!);
    await Promise.all([page.waitForNavigation(), page.click('.options button[value="deny"]')]);
    assert.match(await page.$eval('.notice.recorded', (e) => e.textContent ?? ''), /recorded: No /);
    assert.equal(await page.$eval('.notice.recorded strong', (e) => e.textContent), `No ${XSS[2]}`);
    assert.equal(await page.$$eval('script, iframe, svg, img', (els) => els.length), 0);
    assert.equal(await pwned(page), 0, 'no payload ran');
    assert.deepEqual(problems, []);

    const events = (await listEvents(svc.baseUrl, a)).json.events;
    assert.equal(events.length, 1);
    assert.equal(events[0].data.option, 'deny');
    assert.deepEqual(events[0].data.fields, { note: XSS.join(' '), region: XSS[4] });
    assert.equal(events[0].data.reason, XSS[5]);
    assert.match(events[0].data.responder.user_agent, /HeadlessChrome|Chrome/);

    // The error page keeps what was typed, as text.
    const again = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, {
      token: a.token,
      json: { question: 'Again', fields: [{ name: 'who', label: 'Who', type: 'text', required: true }] },
    });
    const p2 = await open(browser, again.json.approval.url, problems, false);
    await p2.type('#reason', XSS[0]!);
    await Promise.all([p2.waitForNavigation(), p2.click('.options button[value="approve"]')]);
    assert.match(await p2.$eval('.notice.error', (e) => e.textContent ?? ''), /fields\.who \(Who\): is required/);
    assert.equal(await p2.$eval('#reason', (e) => (e as unknown as { value: string }).value), XSS[0]);
    assert.deepEqual(problems, []);
    await p2.close();
    await page.close();
  });

  it('renders the page on a phone, screenshot included (APPROVAL_SCREENSHOT=docs/approval.png for the README)', { timeout: 60_000 }, async () => {
    const r = await api(svc.baseUrl, 'POST', `/api/v1/addresses/${a.id}/approvals`, {
      token: a.token,
      json: {
        question: 'Approve the $4,197 purchase of 3 GPU instances?',
        details: 'Vendor: ACME Cloud\nPlan: 3 × g5.xlarge, 12 months\nRequested by: procurement-agent (task T-1182)\n\nThe quote expires on Friday.',
        options: [
          { id: 'approve', label: 'Approve' },
          { id: 'deny', label: 'Deny' },
          { id: 'ask', label: 'Ask me later' },
        ],
        fields: [
          { name: 'cost_center', label: 'Cost center', type: 'select', choices: ['R&D', 'Operations', 'Marketing'], required: true },
          { name: 'limit', label: 'Spending limit (USD)', type: 'number' },
          { name: 'notify', label: 'Tell the team when it is done', type: 'boolean' },
        ],
      },
    });
    const problems: string[] = [];
    const page = await open(browser, r.json.approval.url, problems, true);
    const file = process.env.APPROVAL_SCREENSHOT ?? join(mkdtempSync(join(tmpdir(), 'ra-approval-')), 'approval.png');
    await page.screenshot({ path: file as `${string}.png`, fullPage: true });
    assert.ok(statSync(file).size > 10_000, 'a real screenshot');
    // Readable on a phone: nothing wider than the viewport.
    assert.ok(
      await page.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth <= 390,
      ),
    );
    assert.deepEqual(problems, []);
    await page.close();
  });
});
