import type { NextFunction, Request, Response } from 'express';
import type { Histogram } from 'prom-client';
import { HcpMetrics } from './hcp-metrics';

type Labels = 'method' | 'route' | 'status';

/**
 * Times every request and labels it by route pattern (never the raw path: ids would explode
 * cardinality). Each label set's series is looked up once and kept: an answer costs a map lookup and
 * an observation, not a hash of its labels.
 */
export function httpMetrics(metrics: HcpMetrics) {
  const series = new Map<string, ReturnType<Histogram<Labels>['labels']>>();
  const seriesOf = (method: string, route: string, status: string) => {
    const key = `${method} ${status} ${route}`;
    let found = series.get(key);
    if (!found) {
      found = metrics.httpRequests.labels({ method, route, status });
      series.set(key, found);
    }
    return found;
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      seriesOf(req.method, route, String(res.statusCode)).observe(Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}
