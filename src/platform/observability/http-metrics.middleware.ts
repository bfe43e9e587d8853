import type { NextFunction, Request, Response } from 'express';
import { HcpMetrics } from './hcp-metrics';

/** Times every request and labels it by route pattern (never the raw path: ids would explode cardinality). */
export function httpMetrics(metrics: HcpMetrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const end = metrics.httpRequests.startTimer();
    res.on('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}
