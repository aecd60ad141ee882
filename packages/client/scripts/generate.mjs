#!/usr/bin/env node
// Generates the client's types from the routes' TypeBox schemas, so the published package carries
// plain TypeScript types (no import of typebox or of the server in its .d.ts) that cannot drift
// from what the routes validate: every exported schema of src/http/schemas.ts becomes a type of the
// same name, its `Static<>` expanded by the compiler. It also copies the one runtime rule the client
// shares with the server, src/domain/event-match.ts (it imports nothing), so both match alike.
// Both outputs land in src/generated/ (not committed); `--check` fails when they are out of date.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repo = resolve(pkg, '..', '..');
const outDir = join(pkg, 'src', 'generated');
const schemasFile = join(repo, 'src', 'http', 'schemas.ts');
// Every file of route schemas the client has types for, as a path from src/ (first name wins).
const SCHEMA_FILES = [
  'http/schemas',
  'http/routes/claim-schemas',
  'http/routes/approval-schemas',
  'http/routes/sender-policy-schemas',
  'http/routes/rotation-schemas',
  'http/routes/push-schemas',
];
const eventMatchFile = join(repo, 'src', 'domain', 'event-match.ts');

const options = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  skipLibCheck: true,
  noEmit: true,
  types: ['node'],
};

// One program for every schema file: each createProgram parses TypeBox's and Node's declarations
// again, and those parses were most of the time `--check` took (it runs in the test suite).
let schemaProgram;

/** The names of a schema file's exported constants. */
function exportedConstants(file) {
  schemaProgram ??= ts.createProgram(
    SCHEMA_FILES.map((f) => join(repo, 'src', `${f}.ts`)),
    options,
  );
  const checker = schemaProgram.getTypeChecker();
  const source = schemaProgram.getSourceFile(file);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  return checker
    .getExportsOfModule(moduleSymbol)
    .filter((s) => s.flags & ts.SymbolFlags.Variable)
    .map((s) => s.name)
    .sort();
}

/** `export type X = { … }` for every exported constant whose `Static<typeof X>` is a type (the TypeBox schemas). */
function schemaTypes() {
  const seen = new Set();
  const lines = [];
  SCHEMA_FILES.forEach((f, i) => {
    lines.push(`import type * as S${i} from './${f}.js';`);
    for (const n of exportedConstants(join(repo, 'src', `${f}.ts`))) {
      if (seen.has(n)) continue;
      seen.add(n);
      lines.push(`export type ${n} = Static<typeof S${i}.${n}>;`);
    }
  });
  const probe = join(repo, 'src', '__client_types_probe__.ts');
  const text = `import type { Static } from 'typebox';\n${lines.join('\n')}\n`;
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (file, lang, ...rest) => (file === probe ? ts.createSourceFile(file, text, lang, true) : getSourceFile(file, lang, ...rest));
  host.fileExists = (file) => file === probe || fileExists(file);
  // The schema program is handed over as the old one, so its unchanged source files are reused, not parsed again.
  const program = ts.createProgram([probe], options, host, schemaProgram);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(probe);
  const failing = new Set(ts.getPreEmitDiagnostics(program, source).map((d) => d.start !== undefined && source.getLineAndCharacterOfPosition(d.start).line));
  const printer = ts.createPrinter({ newLine: ts.NewLineKind.LineFeed });
  const flags =
    ts.NodeBuilderFlags.NoTruncation | ts.NodeBuilderFlags.InTypeAlias | ts.NodeBuilderFlags.MultilineObjectLiterals | ts.NodeBuilderFlags.IgnoreErrors;
  const out = [];
  for (const st of source.statements) {
    if (!ts.isTypeAliasDeclaration(st) || failing.has(source.getLineAndCharacterOfPosition(st.getStart()).line)) continue;
    const type = checker.getTypeAtLocation(st.name);
    if (type.flags & ts.TypeFlags.Unknown) continue; // a constant that is not a schema (BEARER, DOCUMENT_TAGS, …)
    const node = checker.typeToTypeNode(type, undefined, flags);
    if (!node) throw new Error(`cannot print the type of ${st.name.text}`);
    const printed = printer.printNode(ts.EmitHint.Unspecified, node, source);
    if (/\bimport\(|\bStatic\b|\bT[A-Z]\w*</.test(printed)) throw new Error(`${st.name.text} did not expand to plain types: ${printed.slice(0, 200)}`);
    // A union built from a mapped array (Type.Union(list.map(…))) loses its members and becomes never.
    if (/\bnever\b/.test(printed)) throw new Error(`${st.name.text} has a never in it (a Type.Union of a non-tuple array?): ${printed.slice(0, 300)}`);
    out.push(`export type ${st.name.text} = ${printed};`);
  }
  if (out.length === 0) throw new Error(`no TypeBox schema found in ${schemasFile}`);
  for (const needed of ['Event', 'Claim', 'Approval', 'ApprovalField']) {
    if (!out.some((o) => o.startsWith(`export type ${needed} =`))) throw new Error(`the schema ${needed} gave no type`);
  }
  return `// Generated by packages/client/scripts/generate.mjs from ${SCHEMA_FILES.map((f) => `src/${f}.ts`).join(', ')}: do not edit.\n// Each type is Static<typeof schema> of the route schema of the same name.\n\n${out.join('\n\n')}\n`;
}

function eventMatch() {
  return `// Generated by packages/client/scripts/generate.mjs: a copy of src/domain/event-match.ts, do not edit.\n${readFileSync(eventMatchFile, 'utf8')}`;
}

const outputs = { 'api-types.ts': schemaTypes(), 'event-match.ts': eventMatch() };
if (process.argv.includes('--check')) {
  const stale = Object.entries(outputs)
    .filter(([f, text]) => !existsSync(join(outDir, f)) || readFileSync(join(outDir, f), 'utf8') !== text)
    .map(([f]) => f);
  if (stale.length) {
    console.error(`packages/client/src/generated/${stale.join(', ')} out of date: run npm run build -w @return-address/client`);
    process.exit(1);
  }
} else {
  mkdirSync(outDir, { recursive: true });
  for (const [f, text] of Object.entries(outputs)) writeFileSync(join(outDir, f), text);
}
