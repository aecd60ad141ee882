// Checks live HTTP answers against the service's own /openapi.json, as a generated client would
// rely on them: the status is declared for the operation, the content type is one it declares, the
// body validates against the declared schema (with ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses),
// and every declared response header is present and valid.
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Res } from './helpers.js';

// An OpenAPI document, walked as plain JSON (test files may use any).
type Json = any;

export class OpenApiValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly templates: { template: string; re: RegExp }[];

  constructor(readonly doc: Json) {
    addFormats.default(this.ajv);
    // The components under an id of their own, so '#/components/…' refs resolve from any schema.
    this.ajv.addSchema({ $id: 'openapi', components: doc.components }, 'openapi');
    this.templates = Object.keys(doc.paths).map((template) => ({
      template,
      re: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`),
    }));
  }

  /** The documented path template a concrete path falls under. */
  templateOf(path: string): string | undefined {
    const p = path.split('?')[0] ?? path;
    return this.templates.find((t) => t.re.test(p))?.template;
  }

  private deref(node: Json): Json {
    let n = node;
    while (n && typeof n.$ref === 'string') {
      const parts = n.$ref
        .replace(/^#\//, '')
        .split('/')
        .map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
      n = parts.reduce((o: Json, k: string) => o?.[k], this.doc);
    }
    return n;
  }

  private validator(schema: Json): ValidateFunction {
    const text = JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/');
    let v = this.compiled.get(text);
    if (!v) {
      v = this.ajv.compile(JSON.parse(text));
      this.compiled.set(text, v);
    }
    return v;
  }

  /** Asserts `value` is valid against `schema` (a document schema, refs and all). */
  assertValid(schema: Json, value: unknown, what: string): void {
    const v = this.validator(schema);
    assert.ok(v(value), `${what}: ${this.ajv.errorsText(v.errors)}\n${JSON.stringify(value).slice(0, 500)}`);
  }

  /** The request body schema of an operation (application/json). */
  requestSchema(method: string, path: string): Json {
    const template = this.templateOf(path);
    assert.ok(template, `${path} is documented`);
    const op = this.doc.paths[template][method.toLowerCase()];
    assert.ok(op?.requestBody, `${method} ${template} takes a body`);
    return op.requestBody.content['application/json'].schema;
  }

  /**
   * Asserts a live answer is what the document declares for `method path`: a path the document does
   * not give this method must be a 405 as components.responses.MethodNotAllowed describes it.
   */
  check(method: string, path: string, res: Res): void {
    const template = this.templateOf(path);
    assert.ok(template, `${method} ${path} (${res.status}): no documented path matches`);
    const op = this.doc.paths[template][method.toLowerCase()];
    const where = `${method} ${template} → ${res.status}`;
    const response = op
      ? this.deref(op.responses[String(res.status)])
      : res.status === 405
        ? this.deref({ $ref: '#/components/responses/MethodNotAllowed' })
        : undefined;
    assert.ok(response, `${where}: status not declared (${res.text.slice(0, 200)})`);
    for (const [name, header] of Object.entries<Json>(response.headers ?? {})) {
      const value = res.headers.get(name);
      assert.ok(value !== null, `${where}: declared header ${name} missing`);
      const typed = header.schema?.type === 'integer' ? Number(value) : value;
      this.assertValid(header.schema ?? {}, typed, `${where}: header ${name}`);
    }
    if (!response.content) {
      assert.equal(res.text, '', `${where}: declared without content, yet has a body`);
      return;
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    const media = response.content[type];
    assert.ok(media, `${where}: content type ${type} not declared (declared: ${Object.keys(response.content).join(', ')})`);
    if (method === 'HEAD') return;
    const body = type === 'application/json' ? JSON.parse(res.text) : res.text;
    this.assertValid(media.schema ?? {}, body, `${where}: body`);
  }
}
