/** The Content-Type of every JSON answer. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * A response body that is JSON text already, written as it is. For the hot reads whose JSON the
 * database builds (json_build_object): parsing that text into objects only to serialize them again
 * cost more CPU than the query. `T` is the shape the text holds, for the reader of a signature; nothing
 * checks it at run time, so whoever builds one answers for it (the contract tests do).
 */
export class JsonText<T = unknown> {
  declare private readonly shape?: T;

  constructor(readonly text: string) {}
}
