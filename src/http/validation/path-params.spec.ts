import { HcpError } from '@hcp/domain';
import { OpsIdPipe, ProjectIdPipe } from './path-params';

const refusal = (run: () => unknown): HcpError | undefined => {
  try {
    run();
  } catch (err) {
    return err as HcpError;
  }
  return undefined;
};

describe('ids in paths', () => {
  it.each(['team-a', 'team-null', 'null-team', 'p.1', 'Undefined2'])('takes the project id %j', (id) => {
    expect(new ProjectIdPipe().transform(id)).toBe(id);
  });

  it.each(['null', 'undefined', 'NaN', '-a', 'a b', ''])(
    'refuses the project id %j with INVALID_REQUEST (the text of a missing value is never an id)',
    (id) => {
      expect(refusal(() => new ProjectIdPipe().transform(id))).toMatchObject({ code: 'INVALID_REQUEST' });
    },
  );

  it.each(['null', 'undefined', 'NaN'])('refuses the ops id %j', (id) => {
    expect(refusal(() => new OpsIdPipe().transform(id))).toMatchObject({ code: 'INVALID_REQUEST' });
  });
});
