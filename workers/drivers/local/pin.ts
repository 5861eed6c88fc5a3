/**
 * @module workers/drivers/local/pin
 * Containment at the moment of use: a path of the local folder is checked and
 * then acted on through the very object that was checked, so that a symlink
 * swapped in between cannot lead the action elsewhere.
 *
 * Linux (`FdPinner`): `pin` opens the path with O_PATH (the kernel follows the
 * links on the way, nothing is opened for reading or writing), reads where the
 * descriptor really is from `/proc/self/fd/<fd>`, and refuses (EACCES) unless
 * that lies inside the root's real path. The pin is then used through
 * `/proc/self/fd/<fd>` (the pinned object itself) or `/proc/self/fd/<fd>/<name>`
 * (an entry of a pinned folder, never following anything but that folder): the
 * kernel resolves those to the descriptor's own inode, whatever happened to the
 * path string since.
 *
 * Elsewhere (`PathPinner`, also where /proc is missing): the real path is
 * resolved and checked, then used as a string. A link swapped between the check
 * and the use is not caught there (docs/local-storage-security.md).
 */
import { constants as fsc } from 'node:fs'
import * as fsCb from 'node:fs'
import * as fs from 'node:fs/promises'
import * as nodePath from 'node:path'
import { promisify } from 'node:util'
import { FsError } from '../../../core/errors.js'

/** A checked object of the local folder. */
export interface Pin {
  /** A path the kernel resolves to the pinned object itself (a final link is not followed again). */
  readonly at: string
  /** Where the object really was when pinned. */
  readonly real: string
  /** An entry of the pinned folder; the name itself is not followed by the calls that do not follow. */
  child(name: string): string
  /** The object's lstat-like stat when pinned without following, its target's otherwise. */
  stat(): Promise<fsCb.Stats>
  /** Still where it was pinned: not moved, not removed. */
  inPlace(): boolean
  /** Releases the descriptor (idempotent). */
  release(): void
}

export interface PinOptions {
  /** Follow a final symlink (default true). Links earlier in the path are always followed. */
  readonly follow?: boolean
  /** Only a directory will do (ENOTDIR otherwise). */
  readonly dir?: boolean
}

export interface Pinner {
  /**
   * Pins the absolute path `abs`. Throws EACCES when it leads outside the root (also
   * when it does not exist and its nearest existing ancestor, or the target of a
   * dangling link on the way, lies outside), and the system's error otherwise.
   */
  pin(abs: string, opts?: PinOptions): Promise<Pin>
}

/** Linux's O_PATH (not in Node's constants); the generic value, used by x86 and ARM alike. */
const O_PATH = 0o10000000
const openFd = promisify(fsCb.open)
/** Symlinks followed by the kernel before ELOOP; the same bound for our own look-ups. */
const MAX_LINKS = 40

const refused = (): FsError => new FsError('EACCES', 'leads outside the storage root')

function within(realRoot: string): (real: string) => boolean {
  const prefix = realRoot.endsWith(nodePath.sep) ? realRoot : realRoot + nodePath.sep
  return (real) => real === realRoot || real.startsWith(prefix)
}

abstract class BasePinner implements Pinner {
  protected readonly inside: (real: string) => boolean

  constructor(protected readonly realRoot: string) {
    this.inside = within(realRoot)
  }

  protected abstract pinExisting(abs: string, follow: boolean, dir: boolean): Promise<Pin>

  async pin(abs: string, opts: PinOptions = {}): Promise<Pin> {
    try {
      return await this.pinExisting(abs, opts.follow ?? true, opts.dir ?? false)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        if (await this.leadsOutside(abs, 0)) throw refused()
      }
      throw err
    }
  }

  /**
   * For an error only: does a path that cannot be opened lead outside? Its nearest
   * existing ancestor decides, or the target of a dangling link met on the way
   * (resolved by name, as the kernel would have gone on). A link is read only once
   * its folder is known to lie inside.
   */
  private async leadsOutside(abs: string, links: number): Promise<boolean> {
    if (links > MAX_LINKS) return true
    try {
      ;(await this.pinExisting(abs, true, false)).release()
      return false
    } catch (err) {
      if ((err as FsError).code === 'EACCES') return true
    }
    const parent = nodePath.dirname(abs)
    if (parent === abs) return true
    if (await this.leadsOutside(parent, links)) return true
    const target = await fs.readlink(abs).catch(() => null)
    return target !== null && this.leadsOutside(nodePath.resolve(parent, target), links + 1)
  }
}

/** Linux: pins are descriptors, used through /proc/self/fd. */
class FdPinner extends BasePinner {
  protected async pinExisting(abs: string, follow: boolean, dir: boolean): Promise<Pin> {
    const fd = await openFd(abs, O_PATH | (follow ? 0 : fsc.O_NOFOLLOW) | (dir ? fsc.O_DIRECTORY : 0))
    const at = `/proc/self/fd/${fd}`
    let real: string
    try {
      // In memory: /proc answers from the descriptor, never from the disk.
      real = fsCb.readlinkSync(at)
    } catch (err) {
      fsCb.closeSync(fd)
      throw err
    }
    if (!this.inside(real)) {
      fsCb.closeSync(fd)
      throw refused()
    }
    let open = true
    return {
      at,
      real,
      child: (name) => `${at}/${name}`,
      // The inode is in memory while the descriptor holds it: no disk, no pool thread needed.
      stat: async () => fsCb.fstatSync(fd),
      inPlace: () => {
        try {
          return fsCb.readlinkSync(at) === real
        } catch {
          return false
        }
      },
      release: () => {
        if (!open) return
        open = false
        fsCb.closeSync(fd)
      },
    }
  }
}

/** Other systems: real paths, checked then used as strings (not race-free). */
class PathPinner extends BasePinner {
  protected async pinExisting(abs: string, follow: boolean, dir: boolean): Promise<Pin> {
    const real = follow ? await fs.realpath(abs) : nodePath.join(await fs.realpath(nodePath.dirname(abs)), nodePath.basename(abs))
    if (!this.inside(real)) throw refused()
    const st = follow ? await fs.stat(real) : await fs.lstat(real)
    if (dir && !st.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })
    return {
      at: real,
      real,
      child: (name) => nodePath.join(real, name),
      stat: () => (follow ? fs.stat(real) : fs.lstat(real)),
      inPlace: () => true,
      release: () => {},
    }
  }
}

/** The pinner for this system: descriptors where /proc/self/fd shows where they are. */
export async function createPinner(realRoot: string): Promise<Pinner> {
  if (process.platform === 'linux') {
    const fd = await openFd(realRoot, O_PATH | fsc.O_DIRECTORY).catch(() => null)
    if (fd !== null) {
      let seen: string | null = null
      try {
        seen = fsCb.readlinkSync(`/proc/self/fd/${fd}`)
      } catch {
        // No /proc: fall back to paths.
      } finally {
        fsCb.closeSync(fd)
      }
      if (seen === realRoot) return new FdPinner(realRoot)
    }
  }
  return new PathPinner(realRoot)
}

/** The path-based pinner, whatever the system (to test it where descriptors are used). */
export const createPathPinner = (realRoot: string): Pinner => new PathPinner(realRoot)
