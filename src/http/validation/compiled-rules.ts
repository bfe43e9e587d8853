import { getMetadataStorage, type MetadataStorage, type ValidationArguments, ValidationTypes } from 'class-validator';

type ValidationMetadata = ReturnType<MetadataStorage['getTargetValidationMetadatas']>[number];
type Constraint = (value: unknown, args: ValidationArguments) => unknown;

interface Check {
  readonly property: string;
  readonly constraints: unknown[];
  readonly each: boolean;
  readonly validateIf?: (object: object, value: unknown) => boolean;
  readonly validate: Constraint;
}

interface PropertyRules {
  readonly name: string;
  /** `@IsOptional()`, `@ValidateIf()`: the property's checks run only when every condition holds. */
  readonly conditions: ReadonlyArray<(object: object, value: unknown) => boolean>;
  readonly checks: readonly Check[];
}

/**
 * Whether an instance passes its class's rules under `whitelist` + `forbidNonWhitelisted`: `true`, `false`,
 * or `undefined` when a rule answered with a promise (then only class-validator can tell).
 */
export type CompiledRules = (object: object) => boolean | undefined;

export type RuledClass = abstract new (...args: never[]) => unknown;

/**
 * A class's class-validator rules, looked up once. class-validator's `validate` walks the metadata of every
 * decorated class, filters and groups the class's rules and builds an error object per property on each
 * call; here that is done once per class, and a call only runs the rules' own checks, the same constraint
 * instances class-validator calls, in the same way. It answers only valid or not: the errors of an invalid
 * object still come from class-validator, so their text stays its own.
 *
 * `undefined` for a class it does not cover (then class-validator validates it): one without rules (which
 * `forbidUnknownValues` refuses), nested or promise validation, async constraints.
 */
export function compileRules(target: RuledClass): CompiledRules | undefined {
  const storage = getMetadataStorage();
  const metadatas = rulesOf(target);
  if (metadatas.length === 0) return undefined;
  const byProperty = new Map<string, ValidationMetadata[]>();
  for (const metadata of metadatas) {
    const list = byProperty.get(metadata.propertyName) ?? [];
    list.push(metadata);
    byProperty.set(metadata.propertyName, list);
  }
  const properties: PropertyRules[] = [];
  for (const [name, list] of byProperty) {
    const conditions: Array<(object: object, value: unknown) => boolean> = [];
    const checks: Check[] = [];
    for (const metadata of list) {
      switch (metadata.type) {
        case ValidationTypes.WHITELIST:
          break;
        case ValidationTypes.CONDITIONAL_VALIDATION:
          conditions.push(metadata.constraints[0] as (object: object, value: unknown) => boolean);
          break;
        case ValidationTypes.IS_DEFINED:
        case ValidationTypes.CUSTOM_VALIDATION:
          for (const constraint of storage.getTargetValidatorConstraints(metadata.constraintCls)) {
            if (constraint.async) return undefined;
            const instance = constraint.instance;
            checks.push({
              property: metadata.propertyName,
              constraints: metadata.constraints,
              each: metadata.each,
              validateIf: metadata.validateIf,
              validate: (value, args) => instance.validate(value, args),
            });
          }
          break;
        default:
          return undefined;
      }
    }
    properties.push({ name, conditions, checks });
  }
  const allowed = new Set(byProperty.keys());
  return (object) => {
    for (const key of Object.keys(object)) if (!allowed.has(key)) return false;
    let unsure = false;
    for (const property of properties) {
      const value = (object as Record<string, unknown>)[property.name];
      if (!property.conditions.every((condition) => condition(object, value))) continue;
      for (const check of property.checks) {
        const passed = passes(check, object, value);
        if (passed === false) return false;
        if (passed === undefined) unsure = true;
      }
    }
    return unsure ? undefined : true;
  };
}

/** A class's rules as class-validator's executor finds them for `validate(object, options)` without groups. */
export function rulesOf(target: RuledClass): ValidationMetadata[] {
  return getMetadataStorage().getTargetValidationMetadatas(target, undefined as unknown as string, false, false);
}

function passes(check: Check, object: object, value: unknown): boolean | undefined {
  if (check.validateIf && !check.validateIf(object, value)) return true;
  const args: ValidationArguments = {
    targetName: object.constructor?.name,
    property: check.property,
    object,
    value,
    constraints: check.constraints,
  };
  const items = check.each ? itemsOf(value) : undefined;
  if (!items) return verdict(check.validate(value, args));
  let all = true;
  for (const item of items) {
    const result = verdict(check.validate(item, args));
    if (result === false) return false;
    if (result === undefined) all = false;
  }
  return all ? true : undefined;
}

/** class-validator validates `each` item of an array, a Set or a Map's values; anything else as a whole. */
function itemsOf(value: unknown): Iterable<unknown> | undefined {
  if (Array.isArray(value) || value instanceof Set) return value;
  if (value instanceof Map) return value.values();
  return undefined;
}

function verdict(result: unknown): boolean | undefined {
  if (typeof (result as PromiseLike<unknown> | null)?.then === 'function') return undefined;
  return Boolean(result);
}
