/**
 * @module core/state/throttles
 * Login throttles' counts (front/throttle.ts), shared by every node. Part of the state store
 * (core/state.ts).
 */

/**
 * A login throttle's count (front/throttle.ts): the attempts counted from one address
 * against one scope in the current window. Its key names the scope and the address's
 * unit (never a password).
 */
export interface ThrottleCount {
  /** Attempts counted in the window, the latest included. */
  readonly count: number
  /** Epoch ms: when the window began (its first attempt). */
  readonly since: number
}

export interface ThrottleStore {
  /**
   * Counts one attempt under `key`, atomically (concurrent nodes never lose a count). A
   * window that has ended (begun `windowMs` or more before `nowMs`) starts again at 1.
   * @returns the count, this attempt included, and when its window began
   */
  throttleHit(key: string, windowMs: number, nowMs: number): Promise<ThrottleCount>
  /** The count under `key`, without counting; null when there is none or its window ended at or before `nowMs`. */
  throttlePeek(key: string, nowMs: number): Promise<ThrottleCount | null>
  /** Takes back one attempt counted under `key` (the count goes at 0). */
  throttleRefund(key: string): Promise<void>
  /** Forgets what was counted under `key`. */
  throttleForget(key: string): Promise<void>
  /** Removes counts whose window ended at or before `nowMs`. @returns how many */
  purgeThrottles(nowMs: number): Promise<number>
}
