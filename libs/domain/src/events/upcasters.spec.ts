import { UpcasterRegistry } from './upcasters';

describe('upcaster registry', () => {
  const registry = new UpcasterRegistry({ Thing: 3 })
    .register('Thing', 1, (d) => ({ ...d, b: 'added in v2' }))
    .register('Thing', 2, ({ a, ...rest }) => ({ ...rest, renamed: a }));

  it('lifts an old event through every step to the current version', () => {
    expect(registry.upcast({ type: 'Thing', version: 1, data: { a: 1 } })).toEqual({
      type: 'Thing',
      version: 3,
      data: { b: 'added in v2', renamed: 1 },
    });
  });

  it('leaves a current event untouched', () => {
    const e = { type: 'Thing', version: 3, data: { x: 1 } };
    expect(registry.upcast(e)).toEqual(e);
  });

  it('refuses events newer than the release and unknown types', () => {
    expect(() => registry.upcast({ type: 'Thing', version: 4, data: {} })).toThrow(/newer/);
    expect(() => registry.upcast({ type: 'Other', version: 1, data: {} })).toThrow(/unknown/);
  });
});
