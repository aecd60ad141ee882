// Headless Chromium for browser tests: Debian's chromium (apt), driven by puppeteer-core, whose own
// browser download cannot work here. Tests skip, saying why, only when no chromium is installed.
import { existsSync } from 'node:fs';
import puppeteer, { type Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const noChromium = existsSync(CHROMIUM) ? false : `no chromium at ${CHROMIUM} (install it: apt-get install -y chromium, or set CHROMIUM_PATH)`;
if (noChromium) console.log(`# browser tests skipped: ${noChromium}`);

export function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
