import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  IsOptional,
  IsString,
  MaxLength,
  registerDecorator,
  ValidateNested,
  Validate,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { compileRules } from './compiled-rules';

class Named {
  @IsString() @MaxLength(5) name!: string;
  @IsOptional() @IsString({ each: true }) aliases?: string[];
}

function instance<T extends object>(type: new () => T, fields: Record<string, unknown>): T {
  return Object.assign(new type(), fields);
}

describe('compileRules', () => {
  const named = compileRules(Named);

  it('vouches for an object that passes every rule', () => {
    expect(named?.(instance(Named, { name: 'web', aliases: ['a', 'b'] }))).toBe(true);
  });

  it('refuses a broken rule, a missing required property and an unknown one', () => {
    expect(named?.(instance(Named, { name: 'too long' }))).toBe(false);
    expect(named?.(instance(Named, {}))).toBe(false);
    expect(named?.(instance(Named, { name: 'web', admin: true }))).toBe(false);
  });

  it('skips the rules of an optional property that is absent, and checks each item of a list', () => {
    expect(named?.(instance(Named, { name: 'web', aliases: undefined }))).toBe(true);
    expect(named?.(instance(Named, { name: 'web', aliases: ['a', 1] }))).toBe(false);
  });

  it('leaves a class with nested rules, or without rules, to class-validator', () => {
    class Outer {
      @ValidateNested() @Type(() => Named) inner!: Named;
    }
    class Bare {
      name?: string;
    }
    expect(compileRules(Outer)).toBeUndefined();
    expect(compileRules(Bare)).toBeUndefined();
  });

  it('leaves an async rule to class-validator, and cannot tell when a rule answers with a promise', () => {
    @ValidatorConstraint({ async: true })
    class Remote implements ValidatorConstraintInterface {
      validate(): Promise<boolean> {
        return Promise.resolve(true);
      }
    }
    class Checked {
      @Validate(Remote) id!: string;
    }
    class Deferred {
      id!: string;
    }
    registerDecorator({
      target: Deferred,
      propertyName: 'id',
      validator: { validate: () => Promise.resolve(true) as unknown as boolean },
    });
    expect(compileRules(Checked)).toBeUndefined();
    expect(compileRules(Deferred)?.(instance(Deferred, { id: 'x' }))).toBeUndefined();
  });
});
