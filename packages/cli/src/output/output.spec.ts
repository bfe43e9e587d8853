import { parse } from 'yaml';
import { parseOutputFormat, renderList, renderOne } from './output';

const rows = [
  { id: 'a', name: 'web-1', tags: { env: 'dev' }, ip: null },
  { id: 'bb', name: 'db', tags: {}, ip: '10.0.0.2' },
];

describe('output formats', () => {
  it('prints a table with padded columns, "-" for nothing and objects as one-line JSON', () => {
    const text = renderList(rows, 'table', [
      ['ID', (r) => r.id],
      ['NAME', (r) => r.name],
      ['TAGS', (r) => r.tags],
      ['IP', (r) => r.ip],
    ]);
    expect(text).toBe(
      'ID  NAME   TAGS           IP\na   web-1  {"env":"dev"}  -\nbb  db     {}             10.0.0.2\n',
    );
  });

  it('prints JSON and YAML of the items as answered, whatever the columns', () => {
    expect(JSON.parse(renderList(rows, 'json', []))).toEqual(rows);
    expect(parse(renderList(rows, 'yaml', []))).toEqual(rows);
    expect(parse(renderOne(rows[0], 'yaml'))).toEqual(rows[0]);
    expect(renderOne({ a: 1, b: 'x y' }, 'table')).toBe('a  1\nb  x y\n');
  });

  it('refuses an unknown format as a usage error', () => {
    expect(() => parseOutputFormat('xml')).toThrow(/--output must be one of table, json, yaml/);
  });
});
