import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { packageOf } from './heap-summary';

/*
 * Explains a sampling heap profile (.heapprofile, from api-memory.ts --allocations): the bytes allocated
 * during a load window, garbage included, by allocation site (the function that allocated, self bytes)
 * and by package; divided by the reads answered, the bytes a read allocates. Samples are every ~4 KB
 * on average, so a site's figure is an estimate good to a few percent at these totals. Run alone:
 * `node scripts/ts-run.js bench/memory/allocation-summary.ts <file> [reads]`.
 */

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

export interface AllocationSummary {
  totalMb: number;
  bytesPerRead?: number;
  topSites: Array<{ site: string; kb: number; share: number }>;
  byPackage: Array<{ package: string; kb: number; share: number }>;
}

export function summarizeAllocations(file: string, reads?: number, top = 30): AllocationSummary {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode };
  const sites = new Map<string, number>();
  const packages = new Map<string, number>();
  let total = 0;
  const stack: ProfileNode[] = [head];
  for (let node = stack.pop(); node; node = stack.pop()) {
    stack.push(...node.children);
    if (node.selfSize === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const site = `${functionName || '(anonymous)'} ${url.replace(/^.*\/node_modules\//, '')}:${lineNumber + 1}`;
    sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    const pkg = url === '' ? '(V8 / native)' : packageOf(url.replace(/^file:\/\//, ''));
    packages.set(pkg, (packages.get(pkg) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  const ranked = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, bytes]) => ({
        name,
        kb: Math.round(bytes / 102.4) / 10,
        share: Math.round((bytes / total) * 1000) / 1000,
      }));
  return {
    totalMb: Math.round((total / 1024 / 1024) * 10) / 10,
    ...(reads ? { bytesPerRead: Math.round(total / reads) } : {}),
    topSites: ranked(sites).map(({ name, ...rest }) => ({ site: name, ...rest })),
    byPackage: ranked(packages).map(({ name, ...rest }) => ({ package: name, ...rest })),
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === __filename) {
  const [file, reads] = process.argv.slice(2);
  if (!file) {
    process.stderr.write(
      'usage: node scripts/ts-run.js bench/memory/allocation-summary.ts <file.heapprofile> [reads]\n',
    );
    process.exit(2);
  }
  process.stdout.write(`${JSON.stringify(summarizeAllocations(file, reads ? Number(reads) : undefined), null, 1)}\n`);
}
