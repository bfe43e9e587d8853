#!/usr/bin/env node
'use strict';
// The load generator, run by bench/run.ts as a process of its own (never inside HCP or the harness).
// It drives autocannon's API so each request can vary (a random VM of the seeded set, a random project,
// a unique VM name), and records every response's latency itself at full resolution (autocannon's own
// histogram keeps whole milliseconds). Input: one JSON argument (see LoadSpec in bench/lib/load.ts).
// Output: one JSON line on stdout.
const autocannon = require('autocannon');
const { createHash } = require('node:crypto');

const spec = JSON.parse(process.argv[2]);

/** The VM ids the seeding SQL gives: md5('bench-vm-<i>') read as a UUID, version 4 and variant bits set (see bench/lib/seed.ts). */
function seededVmId(i) {
  const m = createHash('md5').update(`bench-vm-${i}`).digest('hex');
  const h = `${m.slice(0, 12)}4${m.slice(13, 16)}8${m.slice(17)}`;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

let counter = 0;
const pick = (list) => list[Math.floor(Math.random() * list.length)];

function fill(template) {
  return template
    .replace(/\{project\}/g, () => pick(spec.projects))
    .replace(/\{vm\}/g, () => seededVmId(1 + Math.floor(Math.random() * spec.vmCount)))
    .replace(/\{n\}/g, () => String(counter++));
}

function setupRequest(req) {
  const path = fill(spec.path);
  // One project per request: the body's {project} is not used, the path decides.
  return { ...req, path, ...(spec.body !== undefined ? { body: fill(spec.body) } : {}) };
}

const latencies = { ok: [], other: [] };
const statusCounts = {};
const errorSamples = [];

const instance = autocannon(
  {
    url: spec.url,
    connections: spec.connections,
    ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationS }),
    ...(spec.overallRate ? { overallRate: spec.overallRate } : {}),
    timeout: spec.timeoutS ?? 30,
    requests: [
      {
        method: spec.method,
        headers: { 'content-type': 'application/json', ...spec.headers },
        setupRequest,
        onResponse(status, body) {
          if ((status < 200 || status >= 300) && errorSamples.length < 3)
            errorSamples.push({ status, body: String(body).slice(0, 300) });
        },
      },
    ],
  },
  (err, result) => {
    if (err) {
      process.stderr.write(`autocannon failed: ${err.stack ?? err}\n`);
      process.exit(1);
    }
    const wallS = Number(process.hrtime.bigint() - started) / 1e9;
    const ok = Float64Array.from(latencies.ok).sort();
    const q = (p) => (ok.length ? ok[Math.min(ok.length - 1, Math.ceil((p / 100) * ok.length) - 1)] : null);
    const out = {
      requests: result.requests.total,
      ok: ok.length,
      wallS,
      okPerS: ok.length / (result.duration || wallS),
      durationS: result.duration,
      statusCounts,
      errorSamples,
      errors: result.errors,
      timeouts: result.timeouts,
      latencyMs: ok.length
        ? {
            p50: q(50),
            p90: q(90),
            p99: q(99),
            max: ok[ok.length - 1],
            mean: ok.reduce((a, b) => a + b, 0) / ok.length,
          }
        : null,
      autocannonLatencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  },
);
const started = process.hrtime.bigint();
instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
  (statusCode >= 200 && statusCode < 300 ? latencies.ok : latencies.other).push(responseTime);
});
