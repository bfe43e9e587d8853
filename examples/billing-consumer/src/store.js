'use strict';

const fs = require('node:fs');

/**
 * The billing system's durable memory of metering records: one JSON record per line in a file, each
 * event id once. New records are appended and fsynced before the consumer commits their offsets, so a
 * crash at any moment loses nothing and a redelivered record is recognised by its event id.
 *
 * A crash in the middle of an append can leave a partial last line: it is cut off when the store opens
 * (its record was not committed to Kafka either, so it comes again).
 */
class RecordStore {
  /** `readOnly`: for reports beside a running consumer (a partial last line is read past, not cut). */
  constructor(file, { readOnly = false } = {}) {
    this.file = file;
    this.readOnly = readOnly;
    this.byId = new Map();
    /** Added since the last flush, by event id: known to the consumer, not yet on disk. */
    this.pending = new Map();
    this.open();
  }

  open() {
    if (!fs.existsSync(this.file)) {
      if (!this.readOnly) fs.writeFileSync(this.file, '');
      return;
    }
    const text = fs.readFileSync(this.file, 'utf8');
    const complete = text.lastIndexOf('\n') + 1;
    if (complete < text.length && !this.readOnly)
      fs.truncateSync(this.file, Buffer.byteLength(text.slice(0, complete)));
    for (const line of text.slice(0, complete).split('\n')) {
      if (line === '') continue;
      const record = JSON.parse(line);
      this.byId.set(record.event_id, record);
    }
  }

  /** Takes a record unless its event id is known; true when it is new. */
  add(record) {
    if (this.readOnly) throw new Error('the store is open for reading only');
    if (this.byId.has(record.event_id) || this.pending.has(record.event_id)) return false;
    this.pending.set(record.event_id, record);
    return true;
  }

  /**
   * Writes the records added since the last flush and waits for the disk. When that fails they are
   * forgotten (not kept as seen), so their redelivery is taken again.
   */
  flush() {
    if (this.pending.size === 0) return;
    const records = [...this.pending.values()];
    this.pending = new Map();
    const fd = fs.openSync(this.file, 'a');
    try {
      fs.writeSync(fd, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    for (const r of records) this.byId.set(r.event_id, r);
  }

  get size() {
    return this.byId.size;
  }

  records() {
    return [...this.byId.values()];
  }
}

module.exports = { RecordStore };
