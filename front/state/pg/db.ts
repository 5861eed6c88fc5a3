/**
 * @module front/state/pg/db
 * What every part of the PostgreSQL store (front/state/pg/*.ts) queries through: one
 * pool, its errors mapped (the database unreachable is UNAVAILABLE, to retry; text it
 * cannot keep is INVALID_INPUT), and a transaction on one connection.
 */
import type pg from 'pg'
import { ApiError } from '../../../core/api-error.js'

/** SQLSTATE classes and codes that mean "the database is not there (now)". */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]|53300)/
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE'])
const UNAVAILABLE_MESSAGE = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error)/

/** Whether an error of `pg` means the database could not be reached or went away. */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true
  if (err instanceof AggregateError) return err.errors.some(isUnavailable)
  return UNAVAILABLE_MESSAGE.test(err.message)
}

/** Text PostgreSQL cannot keep (NUL, which SQLite keeps): input to refuse, not an internal error. */
const UNKEEPABLE_TEXT = new Set(['22021', '22P05'])

export const mapError = (err: unknown): unknown => {
  if (isUnavailable(err)) return new ApiError('UNAVAILABLE', 'the state store is unavailable, try again shortly', { cause: err })
  if (UNKEEPABLE_TEXT.has((err as { code?: unknown }).code as string)) return new ApiError('INVALID_INPUT', 'a text contains a character the state store cannot keep (NUL)', { cause: err })
  return err
}

type Row = Record<string, unknown>

export interface PgDb {
  query<R extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<pg.QueryResult<R>>
  /** The first row, or null. */
  one<R>(sql: string, params: readonly unknown[]): Promise<R | null>
  all<R>(sql: string, params?: readonly unknown[]): Promise<R[]>
  /** How many rows a statement changed. */
  count(sql: string, params: readonly unknown[]): Promise<number>
  /** Whether a statement changed a row. */
  changed(sql: string, params: readonly unknown[]): Promise<boolean>
  /** Runs `fn` in one transaction on one connection: committed if it returns, rolled back if it throws. */
  transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T>
}

/** A foreign-key violation: the owner row is not there. */
export const isNoOwner = (err: unknown): boolean => (err as { code?: unknown }).code === '23503'
export const json = (v: unknown): string => JSON.stringify(v)

export function pgDb(pool: pg.Pool): PgDb {
  const query = async <R extends Row = Row>(sql: string, params: readonly unknown[] = []): Promise<pg.QueryResult<R>> => {
    try {
      return await pool.query<R>(sql, params as unknown[])
    } catch (err) {
      throw mapError(err)
    }
  }
  const one = async <R>(sql: string, params: readonly unknown[]): Promise<R | null> => ((await query(sql, params)).rows[0] as R | undefined) ?? null
  const all = async <R>(sql: string, params: readonly unknown[] = []): Promise<R[]> => (await query(sql, params)).rows as R[]
  /** How many rows a statement changed. */
  const count = async (sql: string, params: readonly unknown[]): Promise<number> => (await query(sql, params)).rowCount ?? 0
  const changed = async (sql: string, params: readonly unknown[]): Promise<boolean> => (await count(sql, params)) > 0
  /** Runs `fn` in one transaction on one connection: committed if it returns, rolled back if it throws. */
  const transaction = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (err) {
      throw mapError(err)
    }
    let broken: Error | undefined
    // A checked-out client has no pool listener: its connection lost between two statements must not be an uncaught 'error'.
    const onError = (err: Error) => (broken = err)
    client.on('error', onError)
    try {
      await client.query('BEGIN')
      const result = await fn(client)
      await client.query('COMMIT')
      return result
    } catch (err) {
      if (isUnavailable(err)) broken = err as Error
      else await client.query('ROLLBACK').catch((e: Error) => (broken = e))
      throw mapError(err)
    } finally {
      client.off('error', onError)
      client.release(broken)
    }
  }

  return { query, one, all, count, changed, transaction }
}
