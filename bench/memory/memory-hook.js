'use strict';
// Preloaded into the HCP process by bench/memory/api-memory.ts (node -r bench/memory/memory-hook.js ...):
// harness instrumentation, not part of HCP. It answers the harness over the IPC channel it was spawned
// with (an API process under `npm start` is a node:cluster worker and has one too):
//   {cmd: 'memory', gc?: true}      -> process.memoryUsage() and V8 heap statistics, after a forced major GC if asked
//   {cmd: 'window-start'}           -> samples process.memoryUsage() every 100 ms, counts GC time by kind
//   {cmd: 'window-stop'}            -> the window's peaks, GC figures and the process's CPU time (ms)
//   {cmd: 'snapshot', file}         -> a forced major GC, then v8.writeHeapSnapshot(file)
//   {cmd: 'alloc-start'}            -> V8's sampling heap profiler, counting garbage too (every allocation site)
//   {cmd: 'alloc-stop', file}       -> stops it and writes the profile (.heapprofile, as DevTools reads it)
// Each answer echoes the request's `id`. The forced GC is V8's own full collection, reached without
// --expose-gc on the command line (which would make `gc` a global of HCP's context).
const v8 = require('node:v8');
const vm = require('node:vm');
const { PerformanceObserver, constants } = require('node:perf_hooks');
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');

if (typeof process.send === 'function') {
  v8.setFlagsFromString('--expose-gc');
  const forceGc = vm.runInNewContext('gc');
  v8.setFlagsFromString('--no-expose-gc');

  const MB = 1024 * 1024;
  const usage = () => {
    const m = process.memoryUsage();
    return {
      rssMb: m.rss / MB,
      heapUsedMb: m.heapUsed / MB,
      heapTotalMb: m.heapTotal / MB,
      externalMb: m.external / MB,
      arrayBuffersMb: m.arrayBuffers / MB,
    };
  };
  const spaces = () =>
    Object.fromEntries(
      v8
        .getHeapSpaceStatistics()
        .map((s) => [
          s.space_name,
          { usedMb: s.space_used_size / MB, sizeMb: s.space_size / MB, committedMb: s.physical_space_size / MB },
        ]),
    );
  const fullGc = () => {
    // Twice: the first collection's finalizers and weak callbacks may free more for the second.
    forceGc();
    forceGc();
  };

  const KIND = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  let window = null;
  let profiler = null;
  const gcObserver = new PerformanceObserver((list) => {
    if (!window) return;
    for (const entry of list.getEntries()) {
      const kind = KIND[entry.detail?.kind ?? entry.kind] ?? 'other';
      if (!window.gc[kind]) window.gc[kind] = { count: 0, ms: 0 };
      const g = window.gc[kind];
      g.count += 1;
      g.ms += entry.duration;
    }
  });

  const sample = () => {
    const u = usage();
    const p = window.peak;
    p.rssMb = Math.max(p.rssMb, u.rssMb);
    p.heapUsedMb = Math.max(p.heapUsedMb, u.heapUsedMb);
    p.heapTotalMb = Math.max(p.heapTotalMb, u.heapTotalMb);
    window.samples += 1;
  };

  process.on('message', (msg) => {
    if (!msg || typeof msg !== 'object' || typeof msg.cmd !== 'string' || !msg.cmd.startsWith('mem:')) return;
    const answer = (body) => process.send({ id: msg.id, ...body });
    try {
      switch (msg.cmd) {
        case 'mem:memory':
          if (msg.gc) fullGc();
          answer({ usage: usage(), spaces: spaces() });
          return;
        case 'mem:window-start':
          window = {
            started: Date.now(),
            cpu: process.cpuUsage(),
            peak: { rssMb: 0, heapUsedMb: 0, heapTotalMb: 0 },
            samples: 0,
            gc: {},
          };
          gcObserver.observe({ entryTypes: ['gc'] });
          window.timer = setInterval(sample, 100);
          sample();
          answer({ ok: true });
          return;
        case 'mem:window-stop': {
          sample();
          clearInterval(window.timer);
          gcObserver.disconnect();
          const { peak, samples, gc, started, cpu } = window;
          window = null;
          const spent = process.cpuUsage(cpu);
          answer({
            peak,
            samples,
            gc,
            ms: Date.now() - started,
            cpuMs: (spent.user + spent.system) / 1000,
            end: usage(),
          });
          return;
        }
        case 'mem:snapshot':
          fullGc();
          answer({ usage: usage(), file: v8.writeHeapSnapshot(msg.file) });
          return;
        case 'mem:alloc-start':
          profiler = new inspector.Session();
          profiler.connect();
          // Objects collected by either GC stay in the profile: garbage is what a read's cost is made of.
          profiler.post(
            'HeapProfiler.startSampling',
            { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true },
            (err) => answer(err ? { error: String(err) } : { ok: true }),
          );
          return;
        case 'mem:alloc-stop':
          profiler.post('HeapProfiler.stopSampling', (err, result) => {
            profiler.disconnect();
            profiler = null;
            if (err) return answer({ error: String(err) });
            writeFileSync(msg.file, JSON.stringify(result.profile));
            answer({ file: msg.file });
          });
          return;
        default:
          answer({ error: `unknown command ${msg.cmd}` });
      }
    } catch (err) {
      answer({ error: String(err?.stack ?? err) });
    }
  });
}
