// The bench's outputs: the text table, the SVG chart (drawn here, no external tool) and the table
// section of bench/README.md.
import { readFileSync, writeFileSync } from 'node:fs';

export interface Row {
  key: string;
  label: string;
  unit: string;
  ceiling?: number;
  service?: number;
  ratio?: number;
  target: string;
  /** null: not measured (skipped). */
  met: boolean | null;
  note: string;
}

export interface Report {
  date: string;
  machine: { cpu: string; nproc: number; memoryGB: number; kernel: string; node: string };
  load: { before: number[]; after: number[] };
  settings: { connections: number; rounds: number; secondsPerRound: number; idlePolls: number };
  rows: Row[];
  details: Record<string, unknown>;
}

const num = (n: number | undefined, unit: string) => {
  if (n === undefined || Number.isNaN(n)) return '—';
  if (unit === 'req/s') return Math.round(n).toLocaleString('en-US');
  return n.toFixed(unit === 'ms' ? 2 : 1);
};

export function renderTable(r: Report): string {
  const head = ['scenario', 'unit', 'ceiling', 'service', 'ratio', 'target', 'met', 'notes'];
  const body = r.rows.map((x) => [
    x.label,
    x.unit,
    num(x.ceiling, x.unit),
    num(x.service, x.unit),
    x.ratio === undefined ? '—' : `${x.ratio.toFixed(2)}x`,
    x.target,
    x.met === null ? 'skipped' : x.met ? 'yes' : 'NO',
    x.note,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i >= 2 && i <= 4 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
  const sep = `|${widths.map((w, i) => (i >= 2 && i <= 4 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  const m = r.machine;
  return [
    line(head),
    sep,
    ...body.map(line),
    '',
    `${r.date} · ${m.cpu}, ${m.nproc} cores, ${m.memoryGB} GB, Linux ${m.kernel}, Node ${m.node} · ` +
      `${r.settings.connections} connections, ${r.settings.rounds} alternating rounds of ~${r.settings.secondsPerRound} s, medians · ` +
      `load average ${r.load.before.map((x) => x.toFixed(2)).join(' ')} before, ${r.load.after.map((x) => x.toFixed(2)).join(' ')} after`,
  ].join('\n');
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Two panels: throughput bars (ceiling beside service) per scenario, then latency and memory against their targets. */
export function renderChart(r: Report): string {
  const W = 960;
  const H = 420;
  const out: string[] = [];
  const text = (x: number, y: number, s: string, o: { size?: number; anchor?: string; weight?: string; fill?: string } = {}) =>
    out.push(
      `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-size="${o.size ?? 11}" text-anchor="${o.anchor ?? 'start'}"` +
        `${o.weight ? ` font-weight="${o.weight}"` : ''} fill="${o.fill ?? '#222'}">${esc(s)}</text>`,
    );
  const rect = (x: number, y: number, w: number, h: number, fill: string) =>
    out.push(`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(0, w).toFixed(1)}" height="${Math.max(0, h).toFixed(1)}" fill="${fill}"/>`);
  const hline = (x1: number, x2: number, y: number, color: string, dash = '') =>
    out.push(`<line x1="${x1}" x2="${x2}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="${color}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`);
  const C = '#9aa5b1';
  const S = '#2f6fde';

  text(20, 26, 'Return Address vs. the ceiling (bare Fastify, no storage)', { size: 15, weight: 'bold' });
  text(20, 44, `${r.machine.cpu}, ${r.machine.nproc} cores, Node ${r.machine.node} · ${r.date.slice(0, 16).replace('T', ' ')} UTC`, { size: 11, fill: '#555' });
  rect(W - 250, 16, 12, 12, C);
  text(W - 232, 27, 'ceiling');
  rect(W - 170, 16, 12, 12, S);
  text(W - 152, 27, 'service (SQLite; PG last)');

  // Panel 1: throughput.
  const tp = r.rows.filter((x) => x.unit === 'req/s');
  const p1 = { x: 60, y: 70, w: 520, h: 280 };
  const max = Math.max(1, ...tp.flatMap((x) => [x.ceiling ?? 0, x.service ?? 0])) * 1.15;
  text(p1.x, p1.y - 8, 'Throughput, requests/s (median of rounds)', { size: 12, weight: 'bold' });
  for (let i = 0; i <= 4; i++) {
    const v = (max / 4) * i;
    const y = p1.y + p1.h - (v / max) * p1.h;
    hline(p1.x, p1.x + p1.w, y, '#e3e3e3');
    text(p1.x - 6, y + 4, `${Math.round(v / 1000)}k`, { anchor: 'end', size: 10, fill: '#666' });
  }
  const slot = p1.w / Math.max(1, tp.length);
  tp.forEach((x, i) => {
    const bw = Math.min(44, slot / 3);
    const cx = p1.x + slot * i + slot / 2;
    const bar = (v: number | undefined, dx: number, color: string) => {
      if (v === undefined) return;
      const h = (v / max) * p1.h;
      rect(cx + dx, p1.y + p1.h - h, bw, h, color);
      text(cx + dx + bw / 2, p1.y + p1.h - h - 4, `${(v / 1000).toFixed(1)}k`, { anchor: 'middle', size: 10 });
    };
    bar(x.ceiling, -bw - 2, C);
    bar(x.service, 2, S);
    if (x.service === undefined) text(cx, p1.y + p1.h - 10, 'skipped', { anchor: 'middle', fill: '#999' });
    const words = x.label.split(/,|:/)[0] ?? x.label;
    const sub = x.label.slice(words.length + 1).trim();
    text(cx, p1.y + p1.h + 16, words, { anchor: 'middle', size: 10 });
    text(cx, p1.y + p1.h + 29, sub, { anchor: 'middle', size: 10 });
    if (x.ratio !== undefined)
      text(cx, p1.y + p1.h + 44, `${x.ratio.toFixed(2)}x (${x.target.replace(' ceiling', '')})`, {
        anchor: 'middle',
        size: 10,
        weight: 'bold',
        fill: x.met ? '#1a7f37' : '#c62828',
      });
  });
  hline(p1.x, p1.x + p1.w, p1.y + p1.h, '#555');

  // Panel 2: latency and memory, each as a bar against its target.
  const p2 = { x: 640, y: 70, w: 290 };
  text(p2.x, p2.y - 8, 'Latency and memory vs. targets', { size: 12, weight: 'bold' });
  const gauges: { label: string; value: number | undefined; target: number; unit: string; met: boolean | null }[] = [];
  const row = (k: string) => r.rows.find((x) => x.key === k);
  for (const [k, label, target] of [
    ['wake_p50', 'wake p50', 5],
    ['wake_p99', 'wake p99', 5],
    ['wake_p99_10', 'wake p99, 10 deliveries in flight', 5],
    ['idle_rss', `${r.settings.idlePolls.toLocaleString('en-US')} idle polls`, 200],
  ] as const) {
    const x = row(k);
    if (x) gauges.push({ label, value: x.service, target, unit: x.unit === 'ms' ? 'ms' : 'MB', met: x.met });
  }
  gauges.forEach((g, i) => {
    const y = p2.y + 10 + i * 66;
    text(p2.x, y + 12, g.label, { size: 11 });
    const scale = Math.max(g.target, g.value ?? 0) * 1.1;
    rect(p2.x, y + 20, p2.w, 18, '#f0f0f0');
    if (g.value !== undefined) rect(p2.x, y + 20, (Math.max(0, g.value) / scale) * p2.w, 18, g.met ? S : '#c62828');
    const tx = p2.x + (g.target / scale) * p2.w;
    out.push(`<line x1="${tx.toFixed(1)}" x2="${tx.toFixed(1)}" y1="${y + 16}" y2="${y + 42}" stroke="#c62828" stroke-dasharray="3 2"/>`);
    text(tx, y + 54, `target ${g.target} ${g.unit}`, { anchor: 'middle', size: 9, fill: '#c62828' });
    text(p2.x + p2.w, y + 12, g.value === undefined ? '—' : `${g.value.toFixed(g.unit === 'ms' ? 2 : 0)} ${g.unit}`, {
      anchor: 'end',
      size: 11,
      weight: 'bold',
    });
  });
  text(
    20,
    H - 12,
    `${r.settings.connections} connections (autocannon), ${r.settings.rounds} alternating rounds of ~${r.settings.secondsPerRound} s per side; ` +
      `every 2xx verified stored, sequences gapless. Load average before: ${r.load.before.map((x) => x.toFixed(2)).join(' ')}.`,
    { size: 10, fill: '#555' },
  );

  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif">\n` +
    `<rect width="${W}" height="${H}" fill="#fff"/>\n${out.join('\n')}\n</svg>\n`
  );
}

const START = '<!-- bench:latest:start -->';
const END = '<!-- bench:latest:end -->';

/** Replaces the section between the markers with the latest table (a full run only). */
export function updateReadme(path: string, r: Report, table: string): void {
  let md: string;
  try {
    md = readFileSync(path, 'utf8');
  } catch {
    return;
  }
  const a = md.indexOf(START);
  const b = md.indexOf(END);
  if (a < 0 || b < a) return;
  const section = `${START}\nLatest run (${r.date}), written by \`npm run bench\`:\n\n${table}\n${END}`;
  writeFileSync(path, md.slice(0, a) + section + md.slice(b + END.length));
}
