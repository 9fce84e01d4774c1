// An oidc-provider adapter that keeps every model (tokens, grants, sessions, ...) in one PostgreSQL table, for the
// bench's "tokens persisted" peer. Written for the bench, the way a production adapter would be: one prepared
// statement per operation, the primary key on (model, id) that every find uses, indexes for the secondary look-ups
// oidc-provider makes (grant id, user code, session uid) and for purging expired rows, and expired rows never
// returned. No cache in front: each find is a round trip, as with the adapters oidc-provider's documentation lists.
import type pg from "pg";

export const PEER_TABLE = "oidc_peer_payload";

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS ${PEER_TABLE} (
    model text NOT NULL,
    id text NOT NULL,
    payload jsonb NOT NULL,
    grant_id text,
    user_code text,
    uid text,
    expires_at timestamptz,
    consumed_at timestamptz,
    PRIMARY KEY (model, id)
  );
  CREATE INDEX IF NOT EXISTS ${PEER_TABLE}_grant_id ON ${PEER_TABLE} (grant_id) WHERE grant_id IS NOT NULL;
  CREATE INDEX IF NOT EXISTS ${PEER_TABLE}_user_code ON ${PEER_TABLE} (model, user_code) WHERE user_code IS NOT NULL;
  CREATE INDEX IF NOT EXISTS ${PEER_TABLE}_uid ON ${PEER_TABLE} (model, uid) WHERE uid IS NOT NULL;
  CREATE INDEX IF NOT EXISTS ${PEER_TABLE}_expires_at ON ${PEER_TABLE} (expires_at);`;

/** Creates the table (if missing) and empties it: each bench run starts from nothing, as svc's fresh database does. */
export async function preparePeerTable(pool: pg.Pool): Promise<void> {
  await pool.query(SCHEMA);
  await pool.query(`TRUNCATE ${PEER_TABLE}`);
}

type Payload = Record<string, unknown> & { grantId?: string; userCode?: string; uid?: string };

const LIVE = "(expires_at IS NULL OR expires_at > now())";

/** What oidc-provider calls on an adapter (see its documentation's adapter interface), for one model. */
export class PgAdapter {
  constructor(
    private readonly pool: pg.Pool,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
    await this.pool.query({
      name: "peer_upsert",
      text: `INSERT INTO ${PEER_TABLE} (model, id, payload, grant_id, user_code, uid, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::int IS NULL THEN NULL ELSE now() + make_interval(secs => $7::int) END)
             ON CONFLICT (model, id) DO UPDATE
             SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id, user_code = EXCLUDED.user_code, uid = EXCLUDED.uid,
                 expires_at = EXCLUDED.expires_at`,
      values: [this.model, id, payload, payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, expiresIn ?? null],
    });
  }

  find(id: string): Promise<Payload | undefined> {
    return this.one("peer_find", `model = $1 AND id = $2`, id);
  }

  findByUserCode(userCode: string): Promise<Payload | undefined> {
    return this.one("peer_find_user_code", `model = $1 AND user_code = $2`, userCode);
  }

  findByUid(uid: string): Promise<Payload | undefined> {
    return this.one("peer_find_uid", `model = $1 AND uid = $2`, uid);
  }

  async consume(id: string): Promise<void> {
    await this.pool.query({
      name: "peer_consume",
      text: `UPDATE ${PEER_TABLE} SET consumed_at = now() WHERE model = $1 AND id = $2`,
      values: [this.model, id],
    });
  }

  async destroy(id: string): Promise<void> {
    await this.pool.query({ name: "peer_destroy", text: `DELETE FROM ${PEER_TABLE} WHERE model = $1 AND id = $2`, values: [this.model, id] });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.pool.query({ name: "peer_revoke_grant", text: `DELETE FROM ${PEER_TABLE} WHERE grant_id = $1`, values: [grantId] });
  }

  private async one(name: string, where: string, value: string): Promise<Payload | undefined> {
    const { rows } = await this.pool.query<{ payload: Payload; consumed: number | null }>({
      name,
      text: `SELECT payload, extract(epoch FROM consumed_at)::int AS consumed FROM ${PEER_TABLE} WHERE ${where} AND ${LIVE}`,
      values: [this.model, value],
    });
    const row = rows[0];
    if (!row) return undefined;
    return row.consumed === null ? row.payload : { ...row.payload, consumed: row.consumed };
  }
}
