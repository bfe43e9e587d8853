import type { Logger } from '@nestjs/common';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { invalidRequest } from '@hcp/domain';
import type { EdgeStep } from '../edge/edge-step';
import type { HttpRequest } from '../edge/http-types';
import { renderError } from './hcp-exception.filter';

/**
 * What Fastify refuses before any hook runs (a URL that is not valid percent-encoding): the stamps
 * every answer carries (trace id, security headers), then the error envelope, as for any other error.
 */
export function frameworkErrors(stamps: readonly EdgeStep[], logger: Logger) {
  return (error: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    for (const stamp of stamps) stamp(req, reply);
    // Fastify's message would echo the path; the answer names the fault only.
    const answer = error.code === 'FST_ERR_BAD_URL' ? invalidRequest('the path is not valid URL encoding') : error;
    renderError(answer, req as HttpRequest, reply, logger);
  };
}
