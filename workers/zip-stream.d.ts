/**
 * Ambient types for `zip-stream` 7.0.x (pinned in package.json; the package ships no
 * types). It is an ES module whose default export extends compress-commons'
 * `ZipArchiveOutputStream`, itself a `readable-stream` Transform (the Node stream API).
 *
 * Besides the public surface, this declares the few compress-commons 7.0.x internals
 * that workers/zip.ts overrides to fix zip64 edge cases and entry names (see that
 * file). They are not a public API: a zip-stream/compress-commons upgrade must re-run
 * test/workers/zip.test.ts, which checks every one of those behaviours.
 */
declare module 'zip-stream' {
  import { Transform, type TransformOptions } from 'node:stream'
  import type { ZlibOptions } from 'node:zlib'

  export interface ZipStreamOptions extends TransformOptions {
    comment?: string
    /** DOS times from local time instead of UTC. */
    forceLocalTime?: boolean
    /** Always write the zip64 end-of-central-directory records. */
    forceZip64?: boolean
    /** Default compression method STORE for every entry. */
    store?: boolean
    zlib?: ZlibOptions
    namePrependSlash?: boolean
  }

  export interface EntryData {
    /** Sanitised by zip-stream (drops a leading `word:` and `../`). */
    name: string
    type?: 'file' | 'directory' | 'symlink'
    date?: Date | string
    /** Unix permission bits; sets platform UNIX. */
    mode?: number
    store?: boolean
    comment?: string
    linkname?: string
    namePrependSlash?: boolean
  }

  export interface GeneralPurposeBit {
    encode(): Buffer
    useDataDescriptor(b: boolean): void
    usesDataDescriptor(): boolean
    useUTF8ForNames(b: boolean): void
    usesUTF8ForNames(): boolean
  }

  /** compress-commons' ZipArchiveEntry: the members filegate reads or replaces. */
  export interface ZipArchiveEntry {
    name: string
    size: number
    csize: number
    _offsets: { file: number; data: number; contents: number }
    getName(): string
    getMethod(): number
    getSize(): number
    getCompressedSize(): number
    getTimeDos(): number
    getGeneralPurposeBit(): GeneralPurposeBit
    getVersionNeededToExtract(): number
    setVersionNeededToExtract(v: number): void
    /** The raw extra field; set by compress-commons to the zip64 record in the central directory. */
    getExtra(): Buffer
    getLocalFileDataExtra(): Buffer
    getCentralDirectoryExtra(): Buffer
    isZip64(): boolean
  }

  export type EntryCallback = (err: Error | null, entry?: ZipArchiveEntry) => void

  export default class ZipStream extends Transform {
    constructor(options?: ZipStreamOptions)
    /** One entry at a time: the callback fires once the entry is written. */
    entry(source: Buffer | NodeJS.ReadableStream | string | null, data: EntryData, callback?: EntryCallback): this | undefined
    /** Writes the central directory once the current entry is done, then ends. */
    finalize(): void
    getBytesWritten(): number

    // compress-commons 7.0.x internals (ZipArchiveOutputStream) ---------------------
    /** Bytes written so far. */
    offset: number
    protected _entries: ZipArchiveEntry[]
    protected _archive: { centralLength: number; centralOffset: number; forceZip64: boolean }
    /** Called synchronously by `entry()`, before the entry's first byte. */
    protected _normalizeEntry(ae: ZipArchiveEntry): void
    protected _writeLocalFileHeader(ae: ZipArchiveEntry): void
    protected _writeCentralFileHeader(ae: ZipArchiveEntry): void
    /** Whether the end of the archive gets the zip64 records. */
    isZip64(): boolean
  }
}
