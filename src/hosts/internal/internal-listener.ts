import { createServer, RequestListener, Server } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { INTERNAL_PATH_PREFIX } from '@hcp/auth';
import { HcpError } from '@hcp/domain';
import type { EdgeStep } from '../../http/edge/edge-step';
import { pathOf } from '../../http/edge/http-types';

const isInternalPath = (path: string) => path.startsWith(INTERNAL_PATH_PREFIX) || path === '/internal';

/**
 * With HCP_INTERNAL_PORT set, which routes a port answers: internal ones only on the internal port, public
 * ones never there. Any other pairing is the NOT_FOUND of a route that does not exist, so neither port
 * shows what the other serves. Decided by the socket's local port, before anything reads the request.
 */
export function separatePorts(internalPort: number): EdgeStep {
  return (req: FastifyRequest) => {
    const onInternalPort = req.raw.socket.localPort === internalPort;
    if (onInternalPort === isInternalPath(pathOf(req))) return undefined;
    return new HcpError('NOT_FOUND', 'no such route');
  };
}

/** The internal port's listener, on the same application (one router, two sockets). */
export function listenInternal(handler: RequestListener, port: number, host: string): Promise<Server> {
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
