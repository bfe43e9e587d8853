import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { HttpReply as Response, HttpRequest as Request } from '../edge/http-types';
import { pathOf, routePatternOf } from '../edge/http-types';
import { HcpError } from '@hcp/domain';
import { Principal, routeKey } from '@hcp/auth';
import { RequestRecorder } from '../request/request-recorder';
import { RefusalLedger } from './refusal-ledger';
import { envelopeOf, toTaxonomyError } from './error-envelope';
import { JSON_CONTENT_TYPE } from '../json-text';
import { traceIdOf } from '../request/request-id';
import { requestLogFields } from '../request/logger-options';
import { UnavailableError } from '../../platform/availability/unavailable-error';

/** Every error path of the API answers the taxonomy envelope, with the request's trace id. */
@Catch()
export class HcpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  constructor(
    private readonly recorder: RequestRecorder,
    private readonly refusals: RefusalLedger,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<RefusableRequest>();
    const res = http.getResponse<Response>();
    const error = toTaxonomyError(exception);
    if (!isRefusal(error, req)) {
      renderError(exception, req, res, this.logger);
      return;
    }
    void this.refuse(exception, error, req, res);
  }

  /**
   * A refused request is an audit fact: record it, then answer (an unrecordable refusal is still
   * refused). Within the refusal budget only: past it the refusal is counted into a summary, and an
   * anonymous flood past the higher budget is answered 429 without any write (see RefusalBudget).
   */
  private async refuse(exception: unknown, error: HcpError, req: RefusableRequest, res: Response): Promise<void> {
    try {
      const verdict = await this.refusals.judge({
        address: req.ip ?? null,
        actor: req.user?.sub ?? null,
        code: error.code,
      });
      if (verdict.kind === 'reject') {
        res.header('Retry-After', String(verdict.retryAfterSeconds));
        const limited = new HcpError('RATE_LIMITED', 'too many refused requests; retry after the time in Retry-After', {
          limit: 'refusals',
        });
        return renderError(limited, req, res, this.logger);
      }
      if (verdict.kind === 'record') await this.record(error, req);
    } catch (err) {
      this.logger.error({ msg: 'could not record a refused request', ...requestLogFields(req), err });
    }
    renderError(exception, req, res, this.logger);
  }

  private record(error: HcpError, req: RefusableRequest): Promise<void> {
    const projectId = typeof req.params?.project_id === 'string' ? req.params.project_id : null;
    return this.recorder.refused(
      {
        actor: req.user?.sub ?? null,
        action: routeKey(req.method, routePatternOf(req) || pathOf(req)),
        method: req.method,
        path: req.url,
        project_id: projectId,
        code: error.code,
        status: error.httpStatus,
      },
      traceIdOf(req),
    );
  }
}

type RefusableRequest = Request & { user?: Principal; accessRefused?: boolean };

/** Refused: not authenticated, not allowed (including the NOT_FOUND that hides a project), or throttled. */
function isRefusal(error: HcpError, req: RefusableRequest): boolean {
  return (
    error.code === 'UNAUTHORIZED' ||
    error.code === 'RATE_LIMITED' ||
    error.code === 'FORBIDDEN' ||
    (error.code === 'NOT_FOUND' && req.accessRefused === true)
  );
}

export function renderError(exception: unknown, req: Request, res: Response, logger: Logger): void {
  const error = toTaxonomyError(exception);
  if (error.code === 'INTERNAL_ERROR' && !(exception instanceof HcpError) && !(exception instanceof HttpException)) {
    logger.error({ msg: 'unhandled error', ...requestLogFields(req), err: exception });
  }
  if (error instanceof UnavailableError) {
    res.header('Retry-After', String(error.retryAfterSeconds));
    // Read by the availability gate, which counts these answers.
    res.unavailable = error.reason;
    if (error !== exception)
      logger.warn({ msg: `answered 503: ${error.reason} unavailable`, ...requestLogFields(req), err: exception });
  }
  res
    .status(error.httpStatus)
    .type(JSON_CONTENT_TYPE)
    .send(envelopeOf(error, traceIdOf(req)));
}
