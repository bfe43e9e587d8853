'use strict';
// Preloaded into HCP by the harness with --profile (node -r bench/lib/profile-hook.js ...): not part of
// HCP. SIGUSR2 starts the V8 CPU profiler in-process, the next SIGUSR2 stops it and writes
// <HCP_BENCH_PROFILE_DIR>/<n>.cpuprofile, so a profile covers exactly one measured load window instead
// of the whole process life (start-up, seeding, idle time while the baseline runs). It also counts the
// SQL round trips HCP makes in the window (pg's Client#query, by statement shape) into <n>.queries.json,
// and process.memoryUsage() at the window's end into <n>.memory.json. With HCP_BENCH_PROFILE_HEAP=1 it
// samples allocations in the same window as well (V8's sampling heap profiler, one sample per 32 KiB
// allocated on average, objects collected since included) into <n>.heapprofile, for DevTools' Memory tab.
const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');

const cluster = require('node:cluster');
// Under the launcher (`npm start`) every child loads this hook too and writes into a folder named after
// itself; the launcher profiles nothing and passes each SIGUSR2 on to its children.
const child = process.env.HCP_CHILD_NAME;
const dir = process.env.HCP_BENCH_PROFILE_DIR && path.join(process.env.HCP_BENCH_PROFILE_DIR, child || '');
const forwarding = () => cluster.isPrimary && Object.keys(cluster.workers || {}).length > 0;
if (dir) {
  fs.mkdirSync(dir, { recursive: true });
  let counts = null;
  const shape = (text) =>
    text
      .replace(/\s+/g, ' ')
      .replace(/'(?:[^']|'')*'/g, "'?'")
      .replace(/\b\d+\b/g, '?')
      .trim()
      .slice(0, 90);
  try {
    const pg = require(require.resolve('pg', { paths: [process.cwd()] }));
    const original = pg.Client.prototype.query;
    pg.Client.prototype.query = function (config, ...rest) {
      if (counts) {
        const text = typeof config === 'string' ? config : config?.text;
        if (typeof text === 'string') {
          const key = shape(text);
          counts.set(key, (counts.get(key) || 0) + 1);
        }
      }
      return original.call(this, config, ...rest);
    };
  } catch {
    // no pg: profile only
  }
  const session = new inspector.Session();
  session.connect();
  let running = false;
  let n = 0;
  session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 500 }));
  const heap = process.env.HCP_BENCH_PROFILE_HEAP === '1';
  if (heap) session.post('HeapProfiler.enable');
  process.on('SIGUSR2', () => {
    if (forwarding()) {
      for (const worker of Object.values(cluster.workers)) worker?.process.kill('SIGUSR2');
      return;
    }
    if (!running) {
      running = true;
      counts = new Map();
      session.post('Profiler.start');
      if (heap)
        session.post('HeapProfiler.startSampling', {
          samplingInterval: 32768,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
      return;
    }
    running = false;
    const queries = Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]));
    counts = null;
    const number = String(++n).padStart(2, '0');
    if (heap) {
      session.post('HeapProfiler.stopSampling', (err, result) => {
        if (!err) fs.writeFileSync(path.join(dir, `${number}.heapprofile`), JSON.stringify(result.profile));
      });
    }
    session.post('Profiler.stop', (err, result) => {
      const file = path.join(dir, `${number}.cpuprofile`);
      const tmp = `${file}.tmp`;
      if (!err) {
        fs.writeFileSync(file.replace(/\.cpuprofile$/, '.queries.json'), JSON.stringify(queries, null, 1));
        fs.writeFileSync(file.replace(/\.cpuprofile$/, '.memory.json'), JSON.stringify(process.memoryUsage()));
        fs.writeFileSync(tmp, JSON.stringify(result.profile));
        fs.renameSync(tmp, file);
      }
    });
  });
}
