import { AgentArgumentError, parseAgentOptions } from './agent-options';

describe('parseAgentOptions', () => {
  it('fills every default but the HCP address and token', () => {
    expect(parseAgentOptions([], {})).toEqual({
      hcp: undefined,
      token: undefined,
      stateDir: '/var/lib/hcp-agent',
      identity: undefined,
      libvirtUri: 'qemu:///system',
      pool: 'hcp',
      network: undefined,
      vncListen: undefined,
      consoleHost: undefined,
      caFile: undefined,
      concurrency: 4,
      heartbeatIntervalMs: 10_000,
      claimWaitMs: 20_000,
      shutdownGraceMs: 20_000,
      enrollOnly: false,
      replaceCredential: false,
      help: false,
    });
  });

  it('reads every flag', () => {
    const options = parseAgentOptions(
      [
        '--hcp=https://hcp.example:8443',
        '--token',
        'hcpb_abc',
        '--state-dir',
        '/tmp/agent',
        '--identity',
        'host-7',
        '--libvirt-uri',
        'test:///default',
        '--pool',
        'fast',
        '--network',
        'default',
        '--vnc-listen',
        '0.0.0.0',
        '--console-host',
        '10.0.0.7',
        '--ca-file',
        '/etc/hcp/ca.pem',
        '--concurrency',
        '8',
        '--heartbeat-interval-ms',
        '5000',
        '--claim-wait-ms',
        '0',
        '--shutdown-grace-ms',
        '1000',
        '--enroll-only',
      ],
      {},
    );
    expect(options).toEqual({
      hcp: 'https://hcp.example:8443',
      token: 'hcpb_abc',
      stateDir: '/tmp/agent',
      identity: 'host-7',
      libvirtUri: 'test:///default',
      pool: 'fast',
      network: 'default',
      vncListen: '0.0.0.0',
      consoleHost: '10.0.0.7',
      caFile: '/etc/hcp/ca.pem',
      concurrency: 8,
      heartbeatIntervalMs: 5_000,
      claimWaitMs: 0,
      shutdownGraceMs: 1_000,
      enrollOnly: true,
      replaceCredential: false,
      help: false,
    });
  });

  it('reads HCP_AGENT_* variables, and a flag wins over its variable', () => {
    const env = {
      HCP_AGENT_HCP: 'http://hcp:8080',
      HCP_AGENT_TOKEN: 'hcpb_env',
      HCP_AGENT_STATE_DIR: '/srv/agent',
      HCP_AGENT_CONCURRENCY: '2',
      HCP_AGENT_CONSOLE_HOST: '192.0.2.1',
    };
    const options = parseAgentOptions(['--concurrency', '6'], env);
    expect(options).toMatchObject({
      hcp: 'http://hcp:8080',
      token: 'hcpb_env',
      stateDir: '/srv/agent',
      concurrency: 6,
      consoleHost: '192.0.2.1',
    });
  });

  it('treats an empty variable as unset', () => {
    expect(parseAgentOptions([], { HCP_AGENT_POOL: '  ', HCP_AGENT_TOKEN: '' })).toMatchObject({
      pool: 'hcp',
      token: undefined,
    });
  });

  it.each([
    [['--concurrency', '0'], /--concurrency \(HCP_AGENT_CONCURRENCY\) must be a whole number from 1 to 32/],
    [['--concurrency', '33'], /from 1 to 32/],
    [['--heartbeat-interval-ms', '1.5'], /--heartbeat-interval-ms/],
    [['--claim-wait-ms', '30001'], /from 0 to 30000/],
    [['--hcp', 'hcp.example'], /--hcp must be a URL/],
    [['--hcp', 'ftp://hcp.example'], /http:\/\/ or https:\/\//],
    [['--colour'], /Unknown option '--colour'/],
    [['stray'], /positional/],
  ])('refuses %j, saying why', (argv, message) => {
    expect(() => parseAgentOptions(argv, {})).toThrow(AgentArgumentError);
    expect(() => parseAgentOptions(argv, {})).toThrow(message);
  });

  it('refuses a wrong number given by variable, naming the variable', () => {
    expect(() => parseAgentOptions([], { HCP_AGENT_CONCURRENCY: 'four' })).toThrow(/HCP_AGENT_CONCURRENCY.*"four"/);
  });
});
