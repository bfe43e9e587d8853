import { RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { routeKey } from '@hcp/auth';

export interface DeclaredRoute {
  /** `METHOD /path` with the route pattern a request matched (`routePatternOf`): the key of the route policy tables. */
  key: string;
  /** The controller's method serving the route; Nest reads a route's enhancers from its metadata. */
  handler: object;
}

/** Every route the controllers declare, read from the decorators' metadata before Nest scans them. */
export function declaredRoutes(controllers: readonly Type[]): DeclaredRoute[] {
  const routes: DeclaredRoute[] = [];
  for (const controller of controllers) {
    const base = Reflect.getMetadata(PATH_METADATA, controller) as string;
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as unknown as Record<string, object>)[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      if (method === undefined || path === undefined) continue;
      const full = `/${[base, path]
        .map((p) => p.replace(/^\/+|\/+$/g, ''))
        .filter(Boolean)
        .join('/')}`;
      routes.push({ key: routeKey(RequestMethod[method], full), handler });
    }
  }
  return routes;
}
