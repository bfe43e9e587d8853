#!/usr/bin/env node
'use strict';
// The load generator, run by bench/run.ts as a process of its own (never inside HCP or the harness).
// It drives autocannon's API so each request can vary (a random VM of the seeded set, a random project,
// a unique VM name), and records every response's latency itself at full resolution (autocannon's own
// histogram keeps whole milliseconds). Input: one JSON argument (see LoadSpec in bench/lib/load.ts).
// Output: one JSON line on stdout.
//
// Two kinds of load. Closed loop (no `overallRate`): autocannon keeps `connections` requests in flight,
// each sent when the previous one on its connection has answered, and a latency runs from the actual
// send: a throughput test, whose latencies are the service time under saturation, not corrected for
// coordinated omission (a closed loop has no intended send times to correct to). Fixed rate
// (`overallRate`): an open loop of our own (openLoop, not autocannon, whose overallRate only throttles
// its connections) sends request i at start + i/rate whatever the answers so far, on at most
// `connections` sockets, and times each from that intended moment, so a stall counts against every
// request it delayed (coordinated omission corrected).
const autocannon = require('autocannon');
const http = require('node:http');
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

const started = process.hrtime.bigint();
if (spec.overallRate) openLoop();
else closedLoop();

/** Closed loop through autocannon (see the header). */
function closedLoop() {
  const instance = autocannon(
    {
      url: spec.url,
      connections: spec.connections,
      ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationS }),
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
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
    (statusCode >= 200 && statusCode < 300 ? latencies.ok : latencies.other).push(responseTime);
  });
}

/** Fixed-rate load: latency from each request's intended send time (see the header). */
function openLoop() {
  const target = new URL(spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
  const intervalMs = 1000 / spec.overallRate;
  const total = spec.amount ?? Math.floor(spec.durationS * spec.overallRate);
  const timeoutMs = (spec.timeoutS ?? 30) * 1000;
  const t0 = performance.now();
  let sent = 0;
  let done = 0;
  let errors = 0;
  let timeouts = 0;
  let lastAnswerMs = t0;

  const finish = () => {
    agent.destroy();
    const wallS = Number(process.hrtime.bigint() - started) / 1e9;
    const ok = Float64Array.from(latencies.ok).sort();
    const q = (p) => (ok.length ? ok[Math.min(ok.length - 1, Math.ceil((p / 100) * ok.length) - 1)] : null);
    const durationS = (lastAnswerMs - t0) / 1000;
    const out = {
      requests: sent,
      ok: ok.length,
      wallS,
      okPerS: ok.length / (durationS || wallS),
      durationS,
      statusCounts,
      errorSamples,
      errors,
      timeouts,
      latencyFrom: 'intended send time',
      latencyMs: ok.length
        ? {
            p50: q(50),
            p90: q(90),
            p99: q(99),
            max: ok[ok.length - 1],
            mean: ok.reduce((a, b) => a + b, 0) / ok.length,
          }
        : null,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  };

  const answered = () => {
    done++;
    lastAnswerMs = performance.now();
    if (done === total) finish();
  };

  const send = (intendedMs) => {
    const body = spec.body !== undefined ? fill(spec.body) : undefined;
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: spec.method,
        path: fill(spec.path),
        agent,
        timeout: timeoutMs,
        headers: {
          'content-type': 'application/json',
          ...spec.headers,
          ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const status = res.statusCode;
          statusCounts[status] = (statusCounts[status] ?? 0) + 1;
          (status >= 200 && status < 300 ? latencies.ok : latencies.other).push(performance.now() - intendedMs);
          if ((status < 200 || status >= 300) && errorSamples.length < 3)
            errorSamples.push({ status, body: Buffer.concat(chunks).toString('utf8').slice(0, 300) });
          answered();
        });
      },
    );
    req.on('timeout', () => {
      timeouts++;
      req.destroy(new Error('timeout'));
    });
    req.on('error', () => {
      errors++;
      answered();
    });
    if (body !== undefined) req.write(body);
    req.end();
  };

  // Sends every request whose intended time has come; a late timer sends the backlog at once, each
  // request still timed from its own intended moment.
  const tick = () => {
    const now = performance.now();
    while (sent < total && t0 + sent * intervalMs <= now) {
      const intended = t0 + sent * intervalMs;
      sent++;
      send(intended);
    }
    if (sent < total) setTimeout(tick, Math.max(0, t0 + sent * intervalMs - performance.now()));
  };
  if (total === 0) finish();
  else tick();
}
