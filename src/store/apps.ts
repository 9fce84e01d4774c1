// Applications of a project and their keys.
import { Prisma } from "../../gen/prisma/client.js";
import type { AppKeyView } from "../domain/access/app-keys.js";
import { type AppConfig, type AuthMethod, parseAppConfig } from "../domain/access/app-settings.js";
import type { AppQuery, AppView } from "../domain/access/apps.js";
import { alreadyExists } from "../domain/errors.js";
import type { Page } from "../domain/list.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { dateOf, NAMED_MAX_FILTERS, type Paged, pageOnDriver } from "./paging.js";
import { textSql } from "./user-query.js";

const APP_SELECT = {
  id: true,
  projectId: true,
  orgId: true,
  name: true,
  state: true,
  clientId: true,
  secretHash: true,
  authMethod: true,
  accessTokenType: true,
  config: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.ApplicationSelect;

/** What an application's row holds besides its view: its kind and the SHA-256 of its client secret. */
export interface NewApp extends Omit<AppView, "state" | "hasSecret" | "updatedAt"> {
  instanceId: string;
  type: "API" | "OIDC" | "SAML";
  secretHash: Uint8Array<ArrayBuffer> | null;
  /** A SAML application's service provider entity id (unique per instance). */
  samlEntityId: string | null;
}

export type AppChange = Partial<Pick<AppView, "name" | "authMethod" | "accessTokenType" | "config"> & { secretHash: null; samlEntityId: string }>;

const nameTaken = () => alreadyExists("Errors.App.AlreadyExists", "the project already has an application with this name");
const entityIdTaken = () => alreadyExists("Errors.App.Saml.EntityIdTaken", "another SAML application of this instance has this entity id");

/** A write whose unique violation is the SAML entity id's or else the name's. */
const uniqueNameAndEntity = <T>(write: Promise<T>) => unique(unique(write, entityIdTaken, "samlEntityId"), nameTaken);

function toView(row: Prisma.ApplicationGetPayload<{ select: typeof APP_SELECT }>): AppView {
  const { secretHash, config, authMethod, ...rest } = row;
  return { ...rest, authMethod: authMethod as AuthMethod, hasSecret: secretHash !== null, config: parseAppConfig(config) };
}

const json = (config: AppConfig) => config as unknown as Prisma.InputJsonValue;

/** A row of the application list statement (pageOnDriver). */
type AppListRow = Omit<AppView, "authMethod" | "config" | "createdAt" | "updatedAt"> & {
  authMethod: string;
  config: Prisma.JsonValue;
  createdAt: unknown;
  updatedAt: unknown;
};

export class AppRepo {
  constructor(readonly db: Db) {}

  /** The redirect URIs of the instance's active OIDC applications (their origins may call the OAuth endpoints). */
  async oidcRedirectUris(instanceId: string): Promise<string[]> {
    const rows = await this.db.application.findMany({ where: { instanceId, type: "OIDC", state: "ACTIVE" }, select: { config: true } });
    return rows.flatMap((r) => {
      const uris = (r.config as { redirectUris?: unknown } | null)?.redirectUris;
      return Array.isArray(uris) ? uris.filter((u): u is string => typeof u === "string") : [];
    });
  }

  async find(projectId: string, id: string): Promise<AppView | null> {
    const row = await this.db.application.findFirst({ where: { id, projectId }, select: APP_SELECT });
    return row && toView(row);
  }

  async insert(app: NewApp): Promise<void> {
    await uniqueNameAndEntity(this.db.application.create({ data: { ...app, config: json(app.config), updatedAt: app.createdAt } }));
  }

  async update(id: string, change: AppChange, updatedAt: Date): Promise<void> {
    const { config, ...rest } = change;
    const data = { ...rest, ...(config ? { config: json(config) } : {}), updatedAt };
    await uniqueNameAndEntity(this.db.application.update({ where: { id }, data }));
  }

  async setSecret(id: string, secretHash: Uint8Array<ArrayBuffer>, updatedAt: Date): Promise<void> {
    await this.db.application.update({ where: { id }, data: { secretHash, updatedAt } });
  }

  /** Moves the application to `state` unless it is there already; whether it moved. */
  async setState(id: string, state: AppView["state"], updatedAt: Date): Promise<boolean> {
    return (await this.db.application.updateMany({ where: { id, state: { not: state } }, data: { state, updatedAt } })).count > 0;
  }

  /** Whether the application existed (its keys go by ON DELETE CASCADE). */
  async delete(id: string): Promise<boolean> {
    return (await this.db.application.deleteMany({ where: { id } })).count > 0;
  }

  /** A project's applications by creation (the id breaking ties); the total bounded (see Page); one statement on the driver. */
  async page(projectId: string, filters: AppQuery[], page: Page): Promise<Paged<AppView>> {
    const conditions = filters.map((q): [string, Prisma.Sql] =>
      q.kind === "name"
        ? [`n${q.match.method[0]}${q.match.ignoreCase ? "i" : ""}`, textSql(Prisma.raw('a."name"'), q.match)]
        : ["s", Prisma.sql`a."state" = ${q.state}::"ResourceState"`],
    );
    const list = await pageOnDriver<AppListRow>(
      this.db,
      {
        from: Prisma.sql`"Application" a`,
        alias: "a",
        where: Prisma.join([Prisma.sql`a."projectId" = ${projectId}`, ...conditions.map(([, sql]) => sql)], " AND "),
        columns: Prisma.sql`a."id", a."projectId", a."orgId", a."name", a."state"::text AS "state", a."clientId", a."secretHash" IS NOT NULL AS "hasSecret",
          a."authMethod", a."accessTokenType"::text AS "accessTokenType", a."config", a."createdAt", a."updatedAt"`,
        order: ["createdAt", "id"],
        name: conditions.length <= NAMED_MAX_FILTERS ? `app_list_${conditions.map(([part]) => part).join("_") || "all"}` : undefined,
      },
      page,
    );
    return {
      ...list,
      rows: list.rows.map((r) => ({
        ...r,
        authMethod: r.authMethod as AuthMethod,
        config: parseAppConfig(r.config),
        createdAt: dateOf(r.createdAt),
        updatedAt: dateOf(r.updatedAt),
      })),
    };
  }

  // ------------------------------------------------------------ keys

  /** `publicKey`: SPKI PEM (the private half is never stored). */
  async insertKey(key: AppKeyView & { instanceId: string; publicKey: string }): Promise<void> {
    await this.db.appKey.create({ data: key });
  }

  /** An application's keys by creation (the id breaking ties); the total bounded (see Page); one statement on the driver. */
  async keyPage(appId: string, page: Page): Promise<Paged<AppKeyView>> {
    const list = await pageOnDriver<Omit<AppKeyView, "createdAt" | "expiresAt"> & { createdAt: unknown; expiresAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"AppKey" k`,
        alias: "k",
        where: Prisma.sql`k."appId" = ${appId}`,
        columns: Prisma.sql`k."id", k."appId", k."createdAt", k."expiresAt"`,
        order: ["createdAt", "id"],
        name: "app_key_list",
      },
      page,
    );
    return {
      ...list,
      rows: list.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), expiresAt: r.expiresAt === null ? null : dateOf(r.expiresAt) })),
    };
  }

  /** Whether the application had the key. */
  async deleteKey(appId: string, id: string): Promise<boolean> {
    return (await this.db.appKey.deleteMany({ where: { id, appId } })).count > 0;
  }
}
