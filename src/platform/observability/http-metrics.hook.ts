import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Histogram } from 'prom-client';
import { HcpMetrics } from './hcp-metrics';

type Labels = 'method' | 'route' | 'status';

/**
 * Times every request (an onResponse hook: Fastify measures from the request's arrival) and labels it
 * by route pattern (never the raw path: ids would explode cardinality). Each label set's series is
 * looked up once and kept: an answer costs a map lookup and an observation, not a hash of its labels.
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
  return (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const route = req.routeOptions?.url ?? 'unmatched';
    seriesOf(req.method, route, String(reply.statusCode)).observe(reply.elapsedTime / 1000);
    done();
  };
}
