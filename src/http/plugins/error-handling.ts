// Registers the parts that turn every failure into the documented error body (design.md, "Errors"):
// the error handler (api-error-handler.ts), the 404/405 handler (method-not-allowed.ts). The parts
// given to Fastify's constructor (client-error-handler.ts, method-not-allowed.ts's frameworkErrors)
// and the Host check (require-host-header.ts) and the DELETE path check (delete-path.ts) are wired in app.ts.
import type { FastifyInstance } from 'fastify';
import { type ErrorHandlingOptions, errorHandler } from './api-error-handler.js';
import { registerMethodNotAllowed } from './method-not-allowed.js';

/** Error handler, 404 handler and 405 detection (a shadow router knows every path and its methods). */
export function registerErrorHandling(app: FastifyInstance, opts: ErrorHandlingOptions): void {
  registerMethodNotAllowed(app, opts);
  app.setErrorHandler(errorHandler(opts));
}
