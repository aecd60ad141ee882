// Headless Chromium for browser tests: Debian's chromium (apt), driven by puppeteer-core, whose own
// browser download cannot work here. Tests skip, saying why, only when no chromium is installed.
import { existsSync } from 'node:fs';
import puppeteer, { type Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const noChromium = existsSync(CHROMIUM) ? false : `no chromium at ${CHROMIUM} (install it: apt-get install -y chromium, or set CHROMIUM_PATH)`;
if (noChromium) console.log(`# browser tests skipped: ${noChromium}`);

export function launchBrowser(): Promise<Browser> {
  // 120 s to start, not puppeteer's 30 s: under CI's load (four test files at once) Chromium once
  // took longer than 30 s to print its endpoint, and the whole browser suite was cancelled.
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, timeout: 120_000, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
