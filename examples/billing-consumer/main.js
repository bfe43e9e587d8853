#!/usr/bin/env node
'use strict';

const { consume } = require('./src/consume');
const { RecordStore } = require('./src/store');
const { usageReport } = require('./src/usage');

const USAGE = `usage:
  main.js consume [--brokers host:port,...] [--topic hcp.metering.v1] [--group hcp-billing] [--store billing-records.jsonl]
  main.js report --from <RFC 3339> --to <RFC 3339> [--project <id>] [--detail] [--store billing-records.jsonl]
Environment: KAFKA_BROKERS, BILLING_TOPIC, BILLING_GROUP, BILLING_STORE (the flags win).`;

function parseArgs(argv) {
  const [command, ...rest] = argv;
  const flags = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (!arg.startsWith('--')) throw new Error(`unexpected argument ${arg}`);
    const name = arg.slice(2);
    if (name === 'detail') flags.detail = true;
    else if (i + 1 < rest.length) flags[name] = rest[++i];
    else throw new Error(`--${name} needs a value`);
  }
  return { command, flags };
}

function time(flags, name) {
  const value = flags[name];
  const parsed = value === undefined ? Number.NaN : Date.parse(value);
  if (Number.isNaN(parsed)) throw new Error(`--${name} must be an RFC 3339 date-time`);
  return new Date(parsed);
}

async function main() {
  const { command, flags } = parseArgs(process.argv.slice(2));
  const store = flags.store ?? process.env.BILLING_STORE ?? 'billing-records.jsonl';
  if (command === 'consume') {
    const brokers = (flags.brokers ?? process.env.KAFKA_BROKERS ?? '')
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean);
    if (brokers.length === 0) throw new Error('no brokers: --brokers or KAFKA_BROKERS');
    await consume({
      brokers,
      topic: flags.topic ?? process.env.BILLING_TOPIC ?? 'hcp.metering.v1',
      groupId: flags.group ?? process.env.BILLING_GROUP ?? 'hcp-billing',
      storeFile: store,
      pauseAfter: Number(flags['pause-after'] ?? 0),
    });
    return;
  }
  if (command === 'report') {
    const from = time(flags, 'from');
    const to = time(flags, 'to');
    if (to <= from) throw new Error('--to must be after --from');
    const report = usageReport(new RecordStore(store, { readOnly: true }).records(), {
      from,
      to,
      project: flags.project ?? null,
      detail: flags.detail === true,
    });
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  throw new Error(USAGE);
}

main().catch((error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
});
