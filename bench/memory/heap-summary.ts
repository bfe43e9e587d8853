import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/*
 * Explains a V8 heap snapshot (.heapsnapshot, as v8.writeHeapSnapshot writes it): self size by node type,
 * the largest constructors by self size, the largest retainers by constructor (retained size from the
 * dominator tree, instances nested in another instance of the same constructor not counted twice), and
 * the heap attributed to a source file's package: a function's code (SharedFunctionInfo, bytecode), its
 * script (source text, line ends), its closures, and whatever those dominate (the state a module's
 * functions alone keep alive). Run alone: `node scripts/ts-run.js bench/memory/heap-summary.ts <file>`.
 */

export interface HeapSummary {
  nodes: number;
  totalMb: number;
  byTypeMb: Record<string, number>;
  topSelf: Array<{ name: string; count: number; selfMb: number }>;
  topRetainers: Array<{ name: string; count: number; retainedMb: number }>;
  byPackage: Array<{ package: string; scripts: number; sourceMb: number; codeMb: number; dominatedMb: number }>;
}

const MB = 1024 * 1024;
const mb = (bytes: number) => Math.round((bytes / MB) * 100) / 100;

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** The package a script belongs to: an npm package, a folder of HCP, or node itself. */
export function packageOf(file: string): string {
  const modules = file.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = file.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (file.startsWith('node:')) return 'node (built-in)';
  const hcp = /\/(src|libs|projections)\/([^/]+)/.exec(file);
  if (hcp) return `hcp ${hcp[1]}/${hcp[2]!.replace(/\.js$/, '')}`;
  return file === '' ? '(no script)' : file.startsWith('/') ? '(other file)' : file;
}

export function summarizeHeapSnapshot(file: string, top = 25): HeapSummary {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const { meta } = snap.snapshot;
  const NF = meta.node_fields.length;
  const EF = meta.edge_fields.length;
  const nType = meta.node_fields.indexOf('type');
  const nName = meta.node_fields.indexOf('name');
  const nSelf = meta.node_fields.indexOf('self_size');
  const nEdges = meta.node_fields.indexOf('edge_count');
  const eType = meta.edge_fields.indexOf('type');
  const eName = meta.edge_fields.indexOf('name_or_index');
  const eTo = meta.edge_fields.indexOf('to_node');
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const WEAK = edgeTypes.indexOf('weak');
  const SHORTCUT = edgeTypes.indexOf('shortcut');
  const INTERNAL = edgeTypes.indexOf('internal');
  const T_CODE = nodeTypes.indexOf('code');
  const T_CLOSURE = nodeTypes.indexOf('closure');
  const T_OBJECT = nodeTypes.indexOf('object');
  const { nodes, edges, strings } = snap;
  const N = nodes.length / NF;

  const firstEdge = new Uint32Array(N + 1);
  for (let i = 0, e = 0; i < N; i++) {
    firstEdge[i] = e;
    e += nodes[i * NF + nEdges]! * EF;
    firstEdge[i + 1] = e;
  }
  const type = (i: number) => nodes[i * NF + nType]!;
  const name = (i: number) => strings[nodes[i * NF + nName]!]!;
  const self = (i: number) => nodes[i * NF + nSelf]!;
  const edgeName = (e: number) => {
    const t = edges[e + eType]!;
    return t === edgeTypes.indexOf('element') || t === edgeTypes.indexOf('hidden')
      ? String(edges[e + eName])
      : strings[edges[e + eName]!]!;
  };
  const strong = (e: number) => {
    const t = edges[e + eType]!;
    return t !== WEAK && t !== SHORTCUT;
  };

  // Depth-first postorder from the root (node 0) over strong edges.
  const post = new Int32Array(N).fill(-1);
  const order = new Uint32Array(N);
  let count = 0;
  {
    const stack = new Uint32Array(N);
    const cursor = new Uint32Array(N);
    const seen = new Uint8Array(N);
    let sp = 0;
    stack[sp++] = 0;
    seen[0] = 1;
    cursor[0] = firstEdge[0]!;
    while (sp > 0) {
      const v = stack[sp - 1]!;
      let pushed = false;
      for (let e = cursor[v]!; e < firstEdge[v + 1]!; e += EF) {
        if (!strong(e)) continue;
        const w = edges[e + eTo]! / NF;
        if (seen[w]) continue;
        cursor[v] = e + EF;
        seen[w] = 1;
        cursor[w] = firstEdge[w]!;
        stack[sp++] = w;
        pushed = true;
        break;
      }
      if (!pushed) {
        sp--;
        post[v] = count;
        order[count++] = v;
      }
    }
  }
  // Predecessors (strong edges between reachable nodes), compressed.
  const predCount = new Uint32Array(N + 1);
  for (let v = 0; v < N; v++) {
    if (post[v]! < 0) continue;
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF)
      if (strong(e) && post[edges[e + eTo]! / NF]! >= 0) predCount[edges[e + eTo]! / NF + 1]++;
  }
  for (let i = 0; i < N; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Uint32Array(predCount[N]!);
  const fill = predCount.slice();
  for (let v = 0; v < N; v++) {
    if (post[v]! < 0) continue;
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
      const w = edges[e + eTo]! / NF;
      if (strong(e) && post[w]! >= 0) preds[fill[w]!++] = v;
    }
  }
  // Cooper, Harvey, Kennedy: "A Simple, Fast Dominance Algorithm", on postorder numbers.
  const UNDEF = -1;
  const idom = new Int32Array(count).fill(UNDEF); // by postorder number
  const root = post[0]!;
  idom[root] = root;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (a < b) a = idom[a]!;
      while (b < a) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let p = count - 2; p >= 0; p--) {
      const v = order[p]!;
      let d = UNDEF;
      for (let k = predCount[v]!; k < predCount[v + 1]!; k++) {
        const q = post[preds[k]!]!;
        if (idom[q] === UNDEF) continue;
        d = d === UNDEF ? q : intersect(q, d);
      }
      if (d !== UNDEF && idom[p] !== d) {
        idom[p] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(count);
  for (let p = 0; p < count; p++) retained[p] = self(order[p]!);
  for (let p = 0; p < count - 1; p++) if (idom[p] !== UNDEF && idom[p] !== p) retained[idom[p]!]! += retained[p]!;

  // Self size by type, and the largest constructors by self size.
  const byType = new Map<string, number>();
  const selfByName = new Map<string, { count: number; self: number }>();
  let total = 0;
  const label = (i: number) => {
    const t = nodeTypes[type(i)]!;
    return t === 'object' || t === 'closure'
      ? `${name(i)}${t === 'closure' ? '()' : ''}`
      : `(${t}) ${name(i).slice(0, 40)}`;
  };
  for (let p = 0; p < count; p++) {
    const v = order[p]!;
    const t = nodeTypes[type(v)]!;
    byType.set(t, (byType.get(t) ?? 0) + self(v));
    total += self(v);
    const l = t === 'string' || t === 'concatenated string' || t === 'sliced string' ? '(string)' : label(v);
    const s = selfByName.get(l) ?? { count: 0, self: 0 };
    s.count++;
    s.self += self(v);
    selfByName.set(l, s);
  }

  // Retainers by constructor: objects and closures whose dominator chain holds no node of the same name.
  const retainedByName = new Map<string, { count: number; retained: number }>();
  for (let p = 0; p < count; p++) {
    const v = order[p]!;
    const t = type(v);
    if (t !== T_OBJECT && t !== T_CLOSURE) continue;
    const n = name(v);
    let nested = false;
    for (let a = idom[p]!, depth = 0; a !== root && depth < 64; a = idom[a]!, depth++) {
      if (name(order[a]!) === n && type(order[a]!) === t) {
        nested = true;
        break;
      }
    }
    if (nested) continue;
    const l = label(v);
    const s = retainedByName.get(l) ?? { count: 0, retained: 0 };
    s.count++;
    s.retained += retained[p]!;
    retainedByName.set(l, s);
  }

  // Packages: scripts by their name, functions (SharedFunctionInfo) by their script, closures by their
  // function; each such node's package then owns what it dominates, unless a node of its own claims it.
  const internalTarget = (v: number, edge: string): number => {
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF)
      if (edges[e + eType] === INTERNAL && edgeName(e) === edge) return edges[e + eTo]! / NF;
    return -1;
  };
  const pkgOfNode = new Map<number, string>();
  const scriptPkg = new Map<number, string>();
  // A Script node is named after its file (or has a `name` edge to it in other V8 versions).
  const pkgOfScript = (s: number): string => {
    let pkg = scriptPkg.get(s);
    if (pkg === undefined) {
      const n = internalTarget(s, 'name');
      pkg = packageOf(name(s) !== '' && name(s) !== 'system / Script' ? name(s) : n >= 0 ? name(n) : '');
      scriptPkg.set(s, pkg);
    }
    return pkg;
  };
  for (let v = 0; v < N; v++) {
    if (post[v]! < 0) continue;
    const t = type(v);
    if (t === T_CODE) {
      let s = internalTarget(v, 'script_or_debug_info');
      if (s < 0) s = internalTarget(v, 'script');
      if (s >= 0 && internalTarget(s, 'source') >= 0) {
        pkgOfNode.set(v, pkgOfScript(s));
        pkgOfNode.set(s, pkgOfScript(s));
      }
    }
  }
  for (let v = 0; v < N; v++) {
    if (post[v]! < 0 || type(v) !== T_CLOSURE) continue;
    const sfi = internalTarget(v, 'shared');
    const pkg = sfi >= 0 ? pkgOfNode.get(sfi) : undefined;
    if (pkg) pkgOfNode.set(v, pkg);
  }
  // Walk the dominator tree from the root down (reverse postorder): a node takes its own package or its
  // dominator's.
  const scripts = new Map<string, { count: number; source: number }>();
  for (const [s, pkg] of scriptPkg) {
    const src = internalTarget(s, 'source');
    const e = scripts.get(pkg) ?? { count: 0, source: 0 };
    e.count++;
    e.source += src >= 0 ? self(src) : 0;
    scripts.set(pkg, e);
  }
  const pkgByPost: Array<string | undefined> = new Array(count);
  const code = new Map<string, number>();
  const dominated = new Map<string, number>();
  for (let p = count - 1; p >= 0; p--) {
    const v = order[p]!;
    const own = pkgOfNode.get(v);
    const pkg = own ?? (p === root ? undefined : pkgByPost[idom[p]!]);
    pkgByPost[p] = pkg;
    const key = pkg ?? '(not dominated by any script)';
    if (own && (type(v) === T_CODE || type(v) === T_CLOSURE)) code.set(key, (code.get(key) ?? 0) + self(v));
    dominated.set(key, (dominated.get(key) ?? 0) + self(v));
  }

  return {
    nodes: count,
    totalMb: mb(total),
    byTypeMb: Object.fromEntries([...byType].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, mb(v)])),
    topSelf: [...selfByName]
      .sort((a, b) => b[1].self - a[1].self)
      .slice(0, top)
      .map(([n, s]) => ({ name: n, count: s.count, selfMb: mb(s.self) })),
    topRetainers: [...retainedByName]
      .sort((a, b) => b[1].retained - a[1].retained)
      .slice(0, top)
      .map(([n, s]) => ({ name: n, count: s.count, retainedMb: mb(s.retained) })),
    byPackage: [...dominated]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([p, d]) => ({
        package: p,
        scripts: scripts.get(p)?.count ?? 0,
        sourceMb: mb(scripts.get(p)?.source ?? 0),
        codeMb: mb(code.get(p) ?? 0),
        dominatedMb: mb(d),
      })),
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === __filename) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node scripts/ts-run.js bench/memory/heap-summary.ts <file.heapsnapshot>\n');
    process.exit(2);
  }
  process.stdout.write(`${JSON.stringify(summarizeHeapSnapshot(file), null, 1)}\n`);
}
