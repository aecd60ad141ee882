// Which captured requests a person's browser made, so they get the static "you may close this tab"
// page instead of JSON (design.md, "Capture URL"): a GET the browser navigated to (an OAuth redirect with
// code/state or error), and a form the browser POSTed (OAuth `response_mode=form_post`, an HTML form
// whose action is the capture URL). Both say so in Accept; a program posting JSON does not.
import { mediaType } from './request-body.js';

const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

const acceptsHtml = (accept: string | undefined) => accept !== undefined && /\btext\/html\b/i.test(accept);

/** Whether a request with these (lower-case) headers is a browser's page navigation. */
export function isBrowserNavigation(method: string, headers: Record<string, string>): boolean {
  if (!acceptsHtml(headers.accept)) return false;
  if (method === 'GET') return true;
  // An HTML form can only send these three encodings (HTML "form submission", enctype).
  return method === 'POST' && FORM_TYPES.has(mediaType(headers['content-type']));
}
