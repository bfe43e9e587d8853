import { ValidationError, ValidationPipe } from '@nestjs/common';
import { invalidRequest } from '@hcp/domain';

/**
 * Strict input: unknown fields are refused (not stripped silently), types are checked, and the error
 * names every offending field so a client can fix its request in one go.
 */
export function strictValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors: ValidationError[]) =>
      invalidRequest('the request is not valid', { fields: flatten(errors) }),
  });
}

function flatten(errors: ValidationError[], prefix = ''): Array<{ field: string; problems: string[] }> {
  return errors.flatMap((e) => {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    const own = e.constraints ? [{ field, problems: Object.values(e.constraints) }] : [];
    return [...own, ...flatten(e.children ?? [], field)];
  });
}
