/**
 * The vcsim harness itself (test/support/vcsim.ts): what the vSphere suites rely on when they inject a
 * fault or read vcsim's inventory. SOAP is spoken raw here so no HCP code is involved.
 */
import https from 'node:https';
import { describeWithVcsim, startVcsim, type Vcsim } from '../../support/vcsim';

function soap(
  sim: Vcsim,
  method: string,
  inner: string,
  cookie?: string,
): Promise<{ status: number; body: string; cookie?: string }> {
  const payload =
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">' +
    `<soapenv:Body><${method} xmlns="urn:vim25">${inner}</${method}></soapenv:Body></soapenv:Envelope>`;
  return new Promise((resolve, reject) => {
    const req = https.request(
      sim.sdkUrl,
      {
        method: 'POST',
        ca: sim.caPem,
        headers: { 'content-type': 'text/xml', SOAPAction: 'urn:vim25/8.0.3.0', ...(cookie ? { cookie } : {}) },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body, cookie: res.headers['set-cookie']?.[0]?.split(';')[0] }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const login = (sim: Vcsim, password = sim.password) =>
  soap(
    sim,
    'Login',
    `<_this type="SessionManager">SessionManager</_this><userName>${sim.username}</userName><password>${password}</password>`,
  );

describeWithVcsim('vcsim harness', () => {
  let sim: Vcsim;

  beforeAll(async () => {
    sim = await startVcsim();
  }, 900_000);

  afterAll(async () => {
    await sim?.stop();
  });

  afterEach(async () => {
    await sim.clearFaults();
  });

  it('serves the SDK over TLS trusted by its own CA for 127.0.0.1 and accepts only its credentials', async () => {
    expect(sim.thumbprintSha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await login(sim)).status).toBe(200);
    const refused = await login(sim, 'wrong');
    expect(refused.status).toBe(500);
    expect(refused.body).toContain('xsi:type="InvalidLogin"');
  });

  it('answers an injected fault for the given number of calls, then serves the method again', async () => {
    await sim.injectFault('Login', 'NoPermission', 1);
    const faulted = await login(sim);
    expect(faulted.status).toBe(500);
    expect(faulted.body).toContain('xsi:type="NoPermission"');
    expect((await login(sim)).status).toBe(200);
  });

  it('holds a hung method without an answer until the faults are cleared', async () => {
    await sim.hang('Login');
    let answered = false;
    const pending = login(sim).then((r) => {
      answered = true;
      return r;
    });
    // Another method still answers while Login is held, so the hold is per method.
    expect(
      (await soap(sim, 'RetrieveServiceContent', '<_this type="ServiceInstance">ServiceInstance</_this>')).status,
    ).toBe(200);
    expect(answered).toBe(false);
    await sim.clearFaults();
    expect((await pending).status).toBe(200);
  });

  it('lists the VPX inventory and shows a power change made through its control endpoint', async () => {
    const before = await sim.inventory();
    expect(before.map((vm) => vm.name)).toEqual(['DC0_C0_RP0_VM0', 'DC0_C0_RP0_VM1', 'DC0_H0_VM0', 'DC0_H0_VM1']);
    const vm = before.find((v) => v.name === 'DC0_C0_RP0_VM0')!;
    expect(vm).toMatchObject({
      power_state: 'poweredOn',
      folder: '/DC0/vm',
      resource_pool: '/DC0/host/DC0_C0/Resources',
    });
    expect(vm.datastores).toEqual(['LocalDS_0']);
    await sim.setPowerState('DC0_C0_RP0_VM0', 'poweredOff');
    expect((await sim.inventory()).find((v) => v.name === 'DC0_C0_RP0_VM0')!.power_state).toBe('poweredOff');
    const calls = await sim.calls();
    expect(calls.Login).toBeGreaterThanOrEqual(1);
  });
});
