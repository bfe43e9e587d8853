import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { KeyRotation, RotationResult, SecretBox } from '@hcp/secrets';

export const SECRET_BOX = Symbol('SECRET_BOX');

/**
 * Provider credentials, sealed (envelope encryption) and kept out of the event store, the read models
 * and every answer. The provider id is the AAD: a sealed secret copied to another provider's row does
 * not open.
 */
@Injectable()
export class ProviderCredentialsStore {
  constructor(
    private readonly db: DataSource,
    @Inject(SECRET_BOX) private readonly box: SecretBox,
  ) {}

  async put(providerId: string, credentials: Record<string, unknown>): Promise<void> {
    const sealed = await this.box.seal(credentials, aad(providerId));
    await this.db.query(
      `INSERT INTO provider_credentials (provider_id, sealed, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (provider_id) DO UPDATE SET sealed = EXCLUDED.sealed, updated_at = now()`,
      [providerId, JSON.stringify(sealed)],
    );
  }

  async get(providerId: string): Promise<Record<string, unknown> | null> {
    const [row] = await this.db.query(`SELECT sealed FROM provider_credentials WHERE provider_id = $1`, [providerId]);
    if (!row) return null;
    return this.box.openJson<Record<string, unknown>>(row.sealed, aad(providerId));
  }

  /**
   * Re-wraps every stored credential's data key with the active KEK (the secrets themselves are not
   * re-encrypted), without downtime: readers keep opening both old and new envelopes meanwhile, and a
   * credential replaced during the run is left as its writer stored it.
   */
  async rotate(): Promise<RotationResult> {
    const rows: Array<{ provider_id: string; sealed: unknown }> = await this.db.query(
      `SELECT provider_id, sealed FROM provider_credentials`,
    );
    return new KeyRotation(this.box).rotateAll(
      rows.map((r) => ({ id: r.provider_id, sealed: r.sealed })),
      async (id, sealed, previous) => {
        const updated = await this.db.query(
          `UPDATE provider_credentials SET sealed = $2, updated_at = now() WHERE provider_id = $1 AND sealed = $3::jsonb RETURNING 1`,
          [id, JSON.stringify(sealed), JSON.stringify(previous)],
        );
        return updated.length > 0;
      },
    );
  }

  async remove(providerId: string): Promise<void> {
    await this.db.query(`DELETE FROM provider_credentials WHERE provider_id = $1`, [providerId]);
  }
}

const aad = (providerId: string) => `hcp:provider-credentials:${providerId}`;
