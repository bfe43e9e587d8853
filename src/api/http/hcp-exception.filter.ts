import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { HcpError } from '@hcp/domain';
import { envelopeOf, toTaxonomyError } from './error-envelope';
import { traceIdOf } from './request-id';

/** Every error path of the API answers the taxonomy envelope, with the request's trace id. */
@Catch()
export class HcpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    renderError(exception, http.getRequest<Request>(), http.getResponse<Response>(), this.logger);
  }
}

/** Express error middleware for what fails before Nest's router (body parsing, size limits). */
export function expressErrorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    renderError(err, req, res, logger);
  };
}

function renderError(exception: unknown, req: Request, res: Response, logger: Logger): void {
  const error = toTaxonomyError(exception);
  if (error.code === 'INTERNAL_ERROR' && !(exception instanceof HcpError) && !(exception instanceof HttpException)) {
    logger.error({ msg: 'unhandled error', trace_id: traceIdOf(req), err: exception });
  }
  res.status(error.httpStatus).json(envelopeOf(error, traceIdOf(req)));
}
