/**
 * What an upgrade will run, and whether this version may run on a database at all: decided here
 * once, from the rows of `schema_migrations` each adapter reads (sqlite/db.ts and postgres/db.ts
 * migrationStatus and migrate).
 */

export interface KnownMigration {
  version: number;
  name: string;
}

export interface AppliedMigration extends KnownMigration {
  appliedAtMs: number;
}

export interface MigrationStatus {
  /** Applied migrations this version knows, by version. */
  applied: AppliedMigration[];
  /** Migrations this version knows that the database has not had: what `migrate` (or a start) runs. */
  pending: KnownMigration[];
  /** Applied migrations this version does not know: a newer version wrote the schema. */
  unknown: AppliedMigration[];
  /** The highest version this build knows. */
  knownVersion: number;
  /** The highest version applied to the database; 0 for an empty database. */
  databaseVersion: number;
}

/**
 * The database's schema is newer than this version knows (a newer points-ledger migrated it):
 * running on it could write rows the newer schema does not expect, so start-up refuses instead.
 */
export class SchemaTooNewError extends Error {
  constructor(
    readonly databaseVersion: number,
    readonly knownVersion: number,
  ) {
    super(
      `the database has schema version ${databaseVersion}, newer than this version of points-ledger knows (${knownVersion}): upgrade points-ledger or restore a backup`,
    );
    this.name = "SchemaTooNewError";
  }
}

export function highestVersion(migrations: readonly KnownMigration[]): number {
  return migrations.reduce((highest, migration) => Math.max(highest, migration.version), 0);
}

/** Throws SchemaTooNewError when a version above every known one was applied. */
export function refuseNewerSchema(appliedVersions: Iterable<number>, known: readonly KnownMigration[]): void {
  const knownVersion = highestVersion(known);
  let databaseVersion = 0;
  for (const version of appliedVersions) databaseVersion = Math.max(databaseVersion, version);
  if (databaseVersion > knownVersion) throw new SchemaTooNewError(databaseVersion, knownVersion);
}

export function migrationStatusOf(applied: readonly AppliedMigration[], known: readonly KnownMigration[]): MigrationStatus {
  const knownVersions = new Set(known.map((migration) => migration.version));
  const appliedVersions = new Set(applied.map((migration) => migration.version));
  const byVersion = (a: KnownMigration, b: KnownMigration) => a.version - b.version;
  return {
    applied: applied.filter((migration) => knownVersions.has(migration.version)).sort(byVersion),
    pending: known
      .filter((migration) => !appliedVersions.has(migration.version))
      .map(({ version, name }) => ({ version, name }))
      .sort(byVersion),
    unknown: applied.filter((migration) => !knownVersions.has(migration.version)).sort(byVersion),
    knownVersion: highestVersion(known),
    databaseVersion: highestVersion(applied),
  };
}
