'use strict';

const { Kafka, logLevel } = require('kafkajs');
const { RecordStore } = require('./store');

/** The envelope version this consumer understands (HCP's MESSAGE_SCHEMA_VERSION). */
const SCHEMA_VERSION = 1;

/**
 * A metering record out of a Kafka message, or the reason it is not one. HCP's envelope:
 * { schema_version, event_id, type, occurred_at, project_id, trace_id, payload }, the payload being the
 * record { event_id, kind, project_id, vm_id, zone, flavor_id, resources, effective_at }.
 */
function recordOf(message) {
  let envelope;
  try {
    envelope = JSON.parse(message.value ? message.value.toString('utf8') : '');
  } catch {
    return { problem: 'the value is not JSON' };
  }
  if (typeof envelope !== 'object' || envelope === null) return { problem: 'the value is not an object' };
  if (envelope.schema_version !== SCHEMA_VERSION)
    return { problem: `schema_version ${JSON.stringify(envelope.schema_version)} is not ${SCHEMA_VERSION}` };
  const r = envelope.payload;
  const text = (v) => typeof v === 'string' && v.length > 0 && v.length <= 200;
  const count = (v) => Number.isInteger(v) && v >= 0;
  if (
    typeof r !== 'object' ||
    r === null ||
    !text(r.event_id) ||
    r.event_id !== envelope.event_id ||
    !text(r.kind) ||
    !text(r.project_id) ||
    !text(r.vm_id) ||
    !text(r.zone) ||
    !text(r.flavor_id) ||
    typeof r.resources !== 'object' ||
    r.resources === null ||
    !count(r.resources.vcpus) ||
    !count(r.resources.ram_mb) ||
    typeof r.effective_at !== 'string' ||
    Number.isNaN(Date.parse(r.effective_at))
  )
    return { problem: 'the payload is not a metering record' };
  return {
    record: {
      event_id: r.event_id,
      kind: r.kind,
      project_id: r.project_id,
      vm_id: r.vm_id,
      zone: r.zone,
      flavor_id: r.flavor_id,
      resources: { vcpus: r.resources.vcpus, ram_mb: r.resources.ram_mb, disk_gb: r.resources.disk_gb },
      effective_at: r.effective_at,
    },
  };
}

const log = (fields) => process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), ...fields })}\n`);

/**
 * Consumes the metering topic in a consumer group. Each batch's new records are written to the store
 * (and fsynced) before the batch's offsets are committed: at least once, and the store's event ids make
 * it exactly once in effect.
 *
 * `pauseAfter` (tests and demonstrations of a crash): once this many new records are stored by this
 * run, stop before committing their offsets and wait to be killed.
 */
async function consume({ brokers, topic, groupId, storeFile, pauseAfter = 0 }) {
  const store = new RecordStore(storeFile);
  log({ event: 'opened', store: storeFile, records: store.size });
  const kafka = new Kafka({ clientId: `billing-${groupId}`, brokers, logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
    rebalanceTimeout: 10_000,
  });
  let storedHere = 0;
  const stop = async (signal) => {
    log({ event: 'stopping', signal });
    await consumer.disconnect().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
      let last = null;
      let fresh = 0;
      let duplicates = 0;
      for (const message of batch.messages) {
        if (!isRunning() || isStale()) break;
        const { record, problem } = recordOf(message);
        // A message that is not a record is skipped (a real system would park it for people to look at).
        if (problem) log({ event: 'skipped', partition: batch.partition, offset: message.offset, problem });
        else if (store.add(record)) {
          fresh += 1;
          storedHere += 1;
        } else duplicates += 1;
        last = message.offset;
        if (pauseAfter > 0 && storedHere >= pauseAfter) {
          store.flush();
          log({ event: 'paused', records: store.size, partition: batch.partition, offset: message.offset });
          await new Promise(() => undefined);
        }
      }
      if (last === null) return;
      try {
        store.flush();
      } catch (error) {
        // Nothing of this batch is committed; a new process takes it again from the store on disk.
        log({ event: 'store_failed', error: String(error) });
        process.exit(1);
      }
      await consumer.commitOffsets([
        { topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() },
      ]);
      log({ event: 'batch', partition: batch.partition, offset: last, fresh, duplicates, records: store.size });
      await heartbeat();
    },
  });
}

module.exports = { consume, recordOf };
