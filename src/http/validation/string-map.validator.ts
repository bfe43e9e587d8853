import { registerDecorator, ValidationOptions } from 'class-validator';

export interface StringMapLimits {
  maxEntries: number;
  keyPattern: RegExp;
  maxValueLength: number;
}

/** A flat JSON object of string values (tags, metadata) within the given limits. */
export function IsStringMap(limits: StringMapLimits, options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isStringMap',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: `$property must be an object of at most ${limits.maxEntries} entries, keys matching ${limits.keyPattern.source}, string values of at most ${limits.maxValueLength} characters`,
        ...options,
      },
      validator: {
        validate(value: unknown): boolean {
          if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
          const entries = Object.entries(value);
          return (
            entries.length <= limits.maxEntries &&
            entries.every(
              ([k, v]) => limits.keyPattern.test(k) && typeof v === 'string' && v.length <= limits.maxValueLength,
            )
          );
        },
      },
    });
  };
}

/** Base64 text whose decoded size stays within `maxBytes`. */
export function IsBase64Within(maxBytes: number, options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isBase64Within',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: `$property must be base64 of at most ${maxBytes} bytes`, ...options },
      validator: {
        validate(value: unknown): boolean {
          if (typeof value !== 'string' || value.length === 0 || value.length % 4 !== 0) return false;
          if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return false;
          return Buffer.from(value, 'base64').length <= maxBytes;
        },
      },
    });
  };
}

/** A JSON object of bounded size (settings, hints, extras): reference data, not a document store. */
export function IsBoundedObject(maxKeys = 50, maxJsonLength = 16_384, options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isBoundedObject',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: `$property must be an object of at most ${maxKeys} keys and ${maxJsonLength} characters of JSON`,
        ...options,
      },
      validator: {
        validate(value: unknown): boolean {
          if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
          return Object.keys(value).length <= maxKeys && JSON.stringify(value).length <= maxJsonLength;
        },
      },
    });
  };
}
