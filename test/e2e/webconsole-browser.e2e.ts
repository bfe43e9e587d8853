import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/** Debian's `chromium` (`.ci/run` installs it); HCP_CHROMIUM_PATH points elsewhere. */
const CHROMIUM =
  process.env.HCP_CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const ARTIFACTS = path.join(__dirname, '..', 'artifacts');

// Without a browser a developer's run skips this file; CI never does (.ci/run installs chromium).
const describeWithBrowser = CHROMIUM || process.env.CI ? describe : describe.skip;

/**
 * The webconsole in a real browser: headless Chromium opens the session's URL, noVNC in HCP's page
 * connects through HCP's proxy to the VM's console and shows it.
 */
describeWithBrowser('webconsole in a browser', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let browser: Browser;
  let tenant: ApiClient;
  let vmId: string;

  beforeAll(async () => {
    if (!CHROMIUM) throw new Error("no Chromium found: install Debian's chromium or set HCP_CHROMIUM_PATH");
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0' } });
    tenant = new ApiClient(hcp.baseUrl, hcp.token('wendy', { web: 'admin' }));
    const created = await tenant.post('/v1/projects/web/vms', {
      name: 'browser-vm',
      zone: 'local',
      ...(await seededChoice(tenant)),
    });
    expect((await jobFinished(tenant, 'web', created.body.job_id)).status).toBe('succeeded');
    vmId = created.body.resource_id;
    await eventually(
      async () => ((await tenant.get(`/v1/projects/web/vms/${vmId}`)).body.status === 'running' ? true : undefined),
      'VM running',
    );
    // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('shows the connected VM console, with no script or CSP error, and saves a screenshot', async () => {
    const session = await tenant.post(`/v1/projects/web/vms/${vmId}/console`, { type: 'webconsole' });
    expect(session.status).toBe(201);
    const page = await browser.newPage({ viewport: { width: 900, height: 600 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
    });
    page.on('response', (res) => {
      if (res.status() >= 400) problems.push(`${res.status()} for ${res.url()}`);
    });
    await page.goto(session.body.url);
    await page.waitForSelector('#status[data-state="connected"]', { timeout: 20_000 });
    // noVNC draws the first framebuffer update right after connecting.
    // (a string: this project compiles without the DOM's types)
    await page.waitForFunction(
      "(() => { const c = document.querySelector('#screen canvas'); return c !== null && c.width > 0 && c.height > 0; })()",
    );
    await page.waitForTimeout(500);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'webconsole.png') });
    expect(await page.textContent('#status')).toBe('connected');
    // The spent token does not linger in the address bar.
    expect(page.url()).not.toContain(session.body.token);
    expect(problems).toEqual([]);

    // The same link again: the token is spent, and the page says so instead of connecting.
    const again = await browser.newPage();
    await again.goto(session.body.url);
    await again.waitForSelector('#status[data-state="failed"]', { timeout: 20_000 });
    await again.close();
    await page.close();
  });
});
