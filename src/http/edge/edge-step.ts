import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * One check or stamp every request passes before its route's guards: it returns nothing to let the
 * request on, or the error to answer instead (which the exception filter renders as the envelope).
 */
export type EdgeStep = (req: FastifyRequest, reply: FastifyReply) => Error | undefined;

type Done = (err?: Error) => void;

/**
 * The steps as one onRequest hook, in the order given: one hook call per request instead of one per
 * step. The first step that refuses ends the request with its error; a step that throws does the same.
 */
export function edgeHook(...steps: EdgeStep[]) {
  return (req: FastifyRequest, reply: FastifyReply, done: Done): void => {
    for (let i = 0; i < steps.length; i++) {
      let refusal: Error | undefined;
      try {
        refusal = steps[i](req, reply);
      } catch (thrown) {
        refusal = thrown instanceof Error ? thrown : new Error(String(thrown));
      }
      if (refusal) {
        done(refusal);
        return;
      }
    }
    done();
  };
}
