import { CONFIG_VARIABLES, loadConfig } from '../../../src/config/hcp-config';
import { COMPOSE_FILE, composeDefault, composeValidator, describeErrors, readYamlDocuments } from './deploy-files';

/** docker/compose.yaml against the Compose Specification's JSON schema vendored in docker/schemas/. */

const validate = composeValidator();
const compose = () => structuredClone(readYamlDocuments(COMPOSE_FILE)[0]) as Record<string, any>;

describe('docker/compose.yaml', () => {
  it('compose file conforms to the Compose Specification', () => {
    const ok = validate(compose());
    expect(describeErrors(validate.errors)).toBe('');
    expect(ok).toBe(true);
  });

  it('a compose file with a misspelled key, a wrong type or an unknown condition is refused', () => {
    const misspelled = compose();
    misspelled.services.hcp.healthcheck = { test: ['CMD', 'true'], intervall: '5s' };
    expect(validate(misspelled)).toBe(false);
    expect(describeErrors(validate.errors)).toContain('"additionalProperty":"intervall"');

    const wrongType = compose();
    wrongType.services.postgres.restart = ['unless-stopped'];
    expect(validate(wrongType)).toBe(false);
    expect(describeErrors(validate.errors)).toContain('/services/postgres/restart must be string');

    const unknownCondition = compose();
    unknownCondition.services.hcp.depends_on.postgres.condition = 'service_ready';
    expect(validate(unknownCondition)).toBe(false);
    expect(describeErrors(validate.errors)).toContain('/services/hcp/depends_on/postgres/condition');
  });

  it('HCP starts once its dependencies are healthy, and its own health comes from the image', () => {
    const { hcp } = compose().services;
    for (const dependency of ['eventstore', 'postgres', 'kafka'])
      expect(hcp.depends_on[dependency]).toEqual({ condition: 'service_healthy' });
    expect(hcp.depends_on['kafka-init']).toEqual({ condition: 'service_completed_successfully' });
    // No healthcheck of its own: the Dockerfile's HEALTHCHECK (checked in dockerfile.test.ts) applies.
    expect(hcp.healthcheck).toBeUndefined();
    expect(hcp.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
  });

  it('every variable the compose file gives HCP is one HCP reads, and HCP accepts their defaults', () => {
    const environment = compose().services.hcp.environment as Record<string, string>;
    const known = new Set(CONFIG_VARIABLES.map((v) => v.name));
    expect(Object.keys(environment).filter((name) => !known.has(name))).toEqual([]);
    const env = Object.fromEntries(Object.entries(environment).map(([k, v]) => [k, composeDefault(String(v))]));
    const config = loadConfig(env);
    expect(config).toMatchObject({
      databaseUrl: 'postgres://hcp:hcp@postgres:5432/hcp',
      eventStoreConnectionString: 'esdb://eventstore:2113?tls=false',
      auth: { mode: 'jwks', jwksFile: '/run/secrets/jwks.json' },
    });
    expect(config.messaging.brokers).toEqual(['kafka:9092']);
  });
});
